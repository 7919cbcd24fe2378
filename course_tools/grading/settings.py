"""The settings of one grading, read in one place, when a grading starts.

    settings = GradingSettings.current(unsandboxed=args.unsandboxed)   # a command's own options win
    result = grade_one("04_conv_backward", notebook, settings)          # route.py

Every launcher hands the same object to the process that grades (as a dict: through the fork
server's pipe, a command-line option, a Dask task's argument), so a setting never travels by
changing this process's environment, and a fork server started earlier never grades with what
the environment said when it started.

Environment variables, for nbgrader_config.py and a hub's service to set:

    COURSE_GRADER_TASK_SECONDS   each task's time budget, default 120 (session.py)
    COURSE_GRADER_MAX_NOTEBOOK_SECONDS   the cap on one notebook's whole grading, default 900
    COURSE_GRADER_UNSANDBOXED    1: grade without bubblewrap (sandbox/bwrap.py says what that costs)
    COURSE_GRADER_MEMORY_MB, COURSE_GRADER_CPU_SECONDS, COURSE_GRADER_PROCESSES,
    COURSE_GRADER_DISK_MB        the worker's limits (sandbox/limits.py)
    COURSE_GRADER_USER, COURSE_GRADER_NO_BWRAP, COURSE_GRADER_SUITE_MEMORY_MB (the grading
    process's own memory cap), COURSE_LIB_DEVICE, COURSE_LIB_NO_MALLOPT
                                 this machine's own (MACHINE_VARIABLES)
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from .sandbox.limits import Limits, int_setting

TASK_SECONDS = 120
# Running the notebook's cells once, before any check: its own limit (session.py's load_timeout).
LOAD_SECONDS = 240
# Past a notebook's budgets: starting Python, importing the grader, pytest's own work.
SLACK_SECONDS = 120
# The most a launcher waits for one notebook unless the instructor sets the time itself: the
# budgets multiply out to hours (01's 15 tasks x 120 s x the wall factor is about 2 h), which no
# honest notebook needs (they take seconds to a few minutes) and which would let one hanging
# submission hold a grading service's worker for hours (COURSE_GRADER_MAX_NOTEBOOK_SECONDS).
MAX_NOTEBOOK_SECONDS = 900


MACHINE_VARIABLES = ("COURSE_GRADER_USER", "COURSE_GRADER_NO_BWRAP", "COURSE_GRADER_SUITE_MEMORY_MB",
                     "COURSE_LIB_DEVICE", "COURSE_LIB_NO_MALLOPT")


GRADE_ON = ("own", "latest")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "yes", "true")


@dataclass(frozen=True)
class GradingSettings:
    task_seconds: float = TASK_SECONDS
    unsandboxed: bool = False
    load_seconds: float = LOAD_SECONDS
    # The whole grading of one notebook, when the instructor sets it (course grade --timeout,
    # HiddenSuiteGrader.timeout); None: what the task budgets allow (time_limit).
    notebook_seconds: int | None = None
    # The cap on what the budgets allow (MAX_NOTEBOOK_SECONDS); an explicit notebook_seconds is not capped.
    max_notebook_seconds: int = MAX_NOTEBOOK_SECONDS
    limits: Limits = field(default_factory=Limits)
    # This machine's own settings, which sandbox/bwrap.py and course_lib read where they are used
    # (the grading account, bubblewrap off for the tests, the device): a fork server started
    # earlier gets them from here rather than from the environment it started with.
    machine: dict = field(default_factory=dict)
    # The course folder whose release versions a submission is graded against (target.py), and
    # which version: "own" (the one its locked cells match) or "latest" (course grade --version
    # latest). None: the bundle's own release in assignments/, without versions.
    course_root: str | None = None
    grade_on: str = "own"
    # Whose submission this is and when the course received it (ISO 8601, UTC), where the caller
    # knows (course grade, nbgrader's plugin, the service: ``for_submission``): what the course
    # knows about the release version that student was given (version_given.py) is the floor
    # below which target.py never grades. None: no student's evidence (the blank release, a test).
    student: str | None = None
    submitted: str | None = None

    def __post_init__(self):
        if self.grade_on not in GRADE_ON:
            raise ValueError(f"grade_on must be one of {', '.join(GRADE_ON)}, not {self.grade_on!r}")

    @classmethod
    def current(cls, *, unsandboxed: bool | None = None, task_seconds: float | None = None,
                notebook_seconds: int | None = None, course_root=None, grade_on: str = "own") -> "GradingSettings":
        """The settings of the environment now; an explicit argument (a command's option) wins.
        The course folder: ``course_root``, else $COURSE_DIR (as the `course` command finds it)."""
        course_root = course_root or os.environ.get("COURSE_DIR") or None
        return cls(
            course_root=str(course_root) if course_root else None, grade_on=grade_on,
            task_seconds=float(task_seconds or int_setting("COURSE_GRADER_TASK_SECONDS", TASK_SECONDS)),
            unsandboxed=_flag("COURSE_GRADER_UNSANDBOXED") if unsandboxed is None else bool(unsandboxed),
            notebook_seconds=int(notebook_seconds) if notebook_seconds else None,
            max_notebook_seconds=int(int_setting("COURSE_GRADER_MAX_NOTEBOOK_SECONDS", MAX_NOTEBOOK_SECONDS)),
            limits=Limits(),
            machine={k: v for k, v in os.environ.items() if k in MACHINE_VARIABLES})

    def for_submission(self, student: str | None, submitted=None) -> "GradingSettings":
        """These settings for one student's submission received at ``submitted`` (a datetime,
        naive UTC or aware, or an ISO string; None: not known)."""
        if submitted is not None and not isinstance(submitted, str):
            submitted = submitted.isoformat()
        return dataclasses.replace(self, student=student or None, submitted=submitted)

    def time_limit(self, tasks: int) -> int:
        """The longest a grading of a notebook with ``tasks`` graded tasks can legitimately take:
        its cells, every task's budget (times the wall factor), and slack, capped at
        ``max_notebook_seconds``. Past it, the grader itself is stuck (or the notebook hangs)."""
        if self.notebook_seconds:
            return int(self.notebook_seconds)
        # The budgets count the submission's CPU time; on the wall clock a wait may last up to
        # the wall factor times longer (Limits).
        budgets = int((self.load_seconds + tasks * self.task_seconds) * self.limits.wall_factor + SLACK_SECONDS)
        return min(budgets, int(self.max_notebook_seconds))

    # ------------------------------------------------------------------ crossing to another process
    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "GradingSettings":
        data = dict(data)
        limits = Limits(**data.pop("limits"))
        return cls(limits=limits, **data)
