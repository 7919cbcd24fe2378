"""The grader's side of a worker: start it, send scenario requests, read answers, survive anything.

    with StudentSession("04_conv_backward", Path("submitted/alice/04_conv_backward/04_conv_backward.ipynb")) as s:
        out = s.forward("PowerScalar", {"scalar": 3}, x)

Whose fault a failure is decides what it becomes:

    StudentError   the submission's code failed, hung, crashed its process, or answered with
                   something that cannot be graded: the check fails, with a message for the student
    GradingError   the grader could not grade (no sandbox, the worker's own start-up failed):
                   reported to the instructor, never turned into a score

Time: each task's checks share a budget (settings.py's task_seconds, default 120 s, restarts of
a crashed worker included, and the grader's own work in the grader-provided functions the
submission calls). A task that uses it up loses its remaining checks, with a message saying so;
the other tasks are graded as usual. The budget, like every time limit of a worker
(sandbox.Limits), counts the submission's own CPU time, read from its cgroup (its processes,
children included, and nobody else's): a busy neighbour slows an honest submission down but
cannot use up its time, and time in which none of its processes could run (it sleeps, or
stopped itself) counts as its CPU time. Each wait also ends after ``wall_factor`` times its seconds on the
wall clock, and a task is charged at least its wall time over that factor, so code that sleeps
or blocks runs out too. Where the machine cannot count a worker's CPU time (no cgroup), the
wall clock is all there is, as before.

Crashes: a task whose checks crash or hang the worker MAX_CRASHES_PER_TASK times loses its
remaining checks; the next task gets a fresh worker and a count of its own. Each restart runs
the notebook's cells again, charged to the budget of the task that needs the worker, so a
notebook costs at most one start plus MAX_CRASHES_PER_TASK restarts per task, each within
that task's budget.

Grader-provided functions (``grader_function``) run grader code on arguments the submission
chose: they are bounded in size (GRADER_READ_ELEMENTS array elements in, what the protocol
carries out, MemoryError under the grading process's memory cap), in time (the request's
deadline and the task's budget) and in number (MAX_CALLBACKS per request). Past a bound, the
check fails with a message saying which; it is never a grading error.

The class is put together from one mixin per job, each in its own file:

    process.py   WorkerProcess   start, read from and stop the sandboxed worker
    budget.py    TimeBudget      each task's time, and which call gave each value (for diagnosis)
    requests.py  Requests        one request, the grader-provided functions it calls, view checks
    calls.py     ScenarioCalls   the calls the checks make, one per worker scenario
    cells.py                     the program cells and the submitted notebook, read
"""
from __future__ import annotations

from pathlib import Path

from course_lib import tasks

from ... import build
from .. import views
from ..diagnosis.diagnosis import Diagnoser
from ..release import read_release
from ..sandbox import bwrap as sandbox
from ..sandbox.cgroups import Cgroup
from ..settings import GradingSettings
from .budget import TimeBudget
from .calls import ScenarioCalls
from .cells import cell_label, program_cells, read_notebook
from .channel import Channel
from .errors import GradingError, StudentError, WorkerTimeout
from .process import READY_TIMEOUT_S, WorkerProcess
from .requests import GRADER_READ_ELEMENTS, MAX_CALLBACK_DEPTH, MAX_CALLBACKS, MAX_CRASHES_PER_TASK, Requests

__all__ = ["CURRENT", "GRADER_READ_ELEMENTS", "MAX_CALLBACKS", "MAX_CALLBACK_DEPTH", "MAX_CRASHES_PER_TASK",
           "READY_TIMEOUT_S", "GradingError", "StudentError", "StudentSession", "WorkerTimeout", "cell_label",
           "current_session", "program_cells", "read_notebook"]


# The session being graded. It lives here, not in suite.py, because `python -m
# course_tools.grading.suite` runs suite.py as __main__, a second copy of that module.
CURRENT: list["StudentSession"] = []


def current_session() -> "StudentSession":
    """The session being graded (autograder/conftest.py hands it to tests as ``student``)."""
    if not CURRENT:
        raise RuntimeError("hidden suites run through course_tools.grading.suite.run.run_suite")
    return CURRENT[-1]


class StudentSession(ScenarioCalls, Requests, TimeBudget, WorkerProcess):
    def __init__(self, assignment: str, notebook: Path, release_notebook: Path | None = None, cell_timeout: int = 60,
                 call_timeout: int = 30, load_timeout: int | None = None, limits: sandbox.Limits | None = None,
                 task_seconds: float | None = None, settings: GradingSettings | None = None,
                 student_lib: Path | None = None):
        """``settings`` (default: the environment's now) says how to grade; the other keywords
        override single settings (the tests' short limits). ``student_lib``: the course_lib the
        worker imports (default: the bundle's release of the assignment; target.py gives a release
        version's)."""
        if assignment not in tasks.ASSIGNMENTS:
            raise ValueError(f"unknown assignment {assignment!r}")
        settings = settings or GradingSettings.current()
        self.assignment = assignment
        self.notebook = Path(notebook)
        self.release_notebook = release_notebook or build.release_notebook(assignment)
        self.student_lib = student_lib
        self.cell_timeout, self.call_timeout = cell_timeout, call_timeout
        self.load_timeout = load_timeout or settings.load_seconds
        self.limits = limits or settings.limits
        self.task_seconds = float(task_seconds or settings.task_seconds)
        self.unsandboxed = settings.unsandboxed
        self.kind: str | None = None
        self.starts = 0
        self.crashes: dict[str | None, int] = {}  # task -> workers its checks crashed or hung
        self.process = None
        self.channel: Channel | None = None
        self.cgroup: Cgroup | None = None
        self._cpu_of_past_workers = 0.0  # CPU seconds of the workers stopped so far
        self.job: sandbox.JobFolder | None = None
        self.load_report: list[dict] = []
        self.fatal: str | None = None
        self.broken: str | None = None  # a grading error: every later request fails the same way
        self.current_task: str | None = None
        self.spent: dict[str, float] = {}
        self.out_of_time: list[str] = []
        self.view_problems: list[str] = []
        self.rotation = views.Rotation()
        self.timing = {"start": 0.0, "cells": 0.0}  # seconds: sandbox and imports; the notebook's cells
        self.memo: dict = {}  # for hidden suites: results one request gives several checks
        self.diagnoser = Diagnoser(assignment)
        self._provenance: dict[int, tuple] = {}  # id(array) -> (array, Call, path): which call gave a value
        # Set by a hidden suite: task -> substitutes every request of that task's checks gets
        # (reference pieces of the notebook's other tasks, see reference.py).
        self.lend = None
        self._offered: dict[str, object] = {}
        self._next_id = 0
        self._callbacks_left, self._refusal = MAX_CALLBACKS, None  # of the request running now (_exchange)
        try:
            submitted = read_notebook(self.notebook)
            release = read_release(self.release_notebook)
            self.cells = program_cells(submitted, release)
        except StudentError as err:
            self.fatal = str(err)
            self.cells = []

    def loaded_cell_errors(self) -> list[str]:
        # The worker reports the cells in the order it was given them: named here, from the grader's
        # own list, by their place in the student's notebook (not by the worker's word).
        return [f"{cell_label(cell)}: {str(report.get('error'))[:300]}"
                for cell, report in zip(self.cells, self.load_report) if not report.get("ok")]
