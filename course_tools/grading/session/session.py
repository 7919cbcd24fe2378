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
"""
from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import threading
import time
from pathlib import Path

import nbformat
import numpy as np

from course_lib import tasks

from ... import build, notebook_metadata
from ...demonstrations import is_demonstration
from .. import views
from ..diagnosis.diagnosis import Call, Diagnoser
from ..release import read_release
from ..sandbox import bwrap as sandbox
from ..sandbox.cgroups import Cgroup, runnable, tree_threads
from ..sandbox.worker.protocol import GraderFunction, StridedView, ValueRefused
from ..settings import GradingSettings
from . import expect
from .channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout
from .errors import GradingError, StudentError, WorkerTimeout

MAX_CRASHES_PER_TASK = 3
MAX_CALLBACKS = 20000  # messages of one request to grader-provided functions: calls, and values sent back
MAX_CALLBACK_DEPTH = 8  # a grader function calling back a function that calls a grader function ...
GRADER_READ_ELEMENTS = views.GRADER_READ_ELEMENTS  # the most array elements grader-side work takes from one call
READY_TIMEOUT_S = 60

# The session being graded. It lives here, not in suite.py, because `python -m
# course_tools.grading.suite` runs suite.py as __main__, a second copy of that module.
CURRENT: list["StudentSession"] = []


def current_session() -> "StudentSession":
    """The session being graded (autograder/conftest.py hands it to tests as ``student``)."""
    if not CURRENT:
        raise RuntimeError("hidden suites run through course_tools.grading.suite.run.run_suite")
    return CURRENT[-1]


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def program_cells(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[dict]:
    """The code the worker runs: the submission's code cells in order, with test cells left out,
    the release's demonstration cells left out (demonstrations.py) and locked cells replaced by
    the release's own text (a student cannot retype them)."""
    canonical = {_meta(c)["grade_id"]: c for c in release.cells if _meta(c).get("grade_id")}
    tests = {gid for gid, c in canonical.items() if _meta(c).get("grade") and not _meta(c).get("solution")}
    shows = {gid for gid, c in canonical.items() if is_demonstration(c)}
    cells = []
    for index, cell in enumerate(submitted.cells):
        if cell.get("cell_type") != "code":
            continue
        meta = _meta(cell)
        grade_id = meta.get("grade_id")
        if grade_id in tests or grade_id in shows or (meta.get("grade") and not meta.get("solution")):
            continue
        # position: where the student sees the cell (1 = the notebook's first cell, as `course check` counts)
        if grade_id in canonical and _meta(canonical[grade_id]).get("locked"):
            cells.append({"grade_id": grade_id, "source": canonical[grade_id].source, "position": index + 1})
        else:
            cells.append({"grade_id": grade_id, "source": cell.get("source", ""), "position": index + 1})
    return cells


def cell_label(cell: dict) -> str:
    """A program cell named as the student finds it in their notebook: "cell 46 (forward_add_code)"."""
    grade_id = cell.get("grade_id")
    return f"cell {cell['position']}" + (f" ({grade_id})" if isinstance(grade_id, str) and grade_id else "")


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook, or StudentError saying what is wrong with the file."""
    if not path.exists():
        raise StudentError(f"no notebook at {path.name}: was it renamed or deleted?")
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as err:  # noqa: BLE001 - any parse failure is the file's fault
        raise StudentError(f"{path.name} is not a readable notebook ({type(err).__name__}: {str(err)[:200]})") from None
    wrong = notebook_metadata.problems(nb)
    if wrong:   # every reader of a submission relies on these types (notebook_metadata.py)
        raise StudentError(f"{path.name} has cell metadata that nbgrader never writes: {'; '.join(wrong[:3])}"
                           f"{' and more' if len(wrong) > 3 else ''}. Restore those cells from the release "
                           f"(or undo the edit of their metadata) and submit again.")
    return nb


class StudentSession:
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

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._stop()
        if self.job is not None:
            self.job.remove()
            self.job = None

    def _stop(self):
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroup is not None:
            self._cpu_of_past_workers += self.cgroup.cpu_seconds() or 0.0
            self.cgroup.remove()  # every process the worker started, daemons included
            self.cgroup = None
        self.process.wait()
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.kind == "unsandboxed":
            for path in sandbox.scratch_files_of(self.account, self._started_at):
                _remove(path)
        self.process = None

    def _start(self, budget: float):
        """Start a worker and run the notebook's cells in it, within ``budget`` seconds (the load
        timeout for the first start; what the current task has left for a restart)."""
        if self.broken:
            raise GradingError(self.broken)
        if self.fatal:
            raise StudentError(self.fatal)
        began = time.monotonic()  # the sandbox's set-up counts as its start
        try:
            self.kind = sandbox.sandbox_kind(self.unsandboxed)
            self.account = sandbox.grading_account()
            if self.job is None:
                self.job = sandbox.JobFolder(self.assignment, self.cells, self.cell_timeout, self.account,
                                             self.limits.wall_factor, course_lib=self.student_lib)
            if self.kind == "unsandboxed":
                self.job.fresh_work_folder(self.account)
            self.cgroup = (Cgroup(self.limits.processes, self.limits.cgroup_memory_bytes, self.limits.cpus)
                           if Cgroup.available() else None)
            if self.kind == "unsandboxed" and (self.cgroup is None or not self.cgroup.holds_processes()):
                raise sandbox.SandboxUnavailable(
                    "grading without bubblewrap needs a cgroup to kill every process a submission starts, and this "
                    "machine does not let the grader create one (run it as root, or install bubblewrap)")
        except sandbox.SandboxUnavailable as err:
            self.broken = str(err)
            raise GradingError(self.broken) from None
        self.starts += 1
        self._started_at = time.time()
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        command = sandbox.worker_command(self.kind, self.job, self.account, request_read, response_write, self.limits)
        try:
            self.process = subprocess.Popen(
                command, pass_fds=(request_read, response_write), env=sandbox.worker_env(self.kind, self.job),
                cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                preexec_fn=sandbox.preexec(self.limits, self.cgroup, self.account, self.kind == "unsandboxed"))
        except OSError as err:
            self.broken = f"the grading worker could not be started: {err}"
            raise GradingError(self.broken) from None
        finally:
            os.close(request_read)
            os.close(response_write)
        self.channel = Channel(response_read, request_write)
        # Until "ready", only the grader's own code has run: any failure is ours, not the student's.
        try:
            ready = self.channel.receive(time.monotonic() + READY_TIMEOUT_S)
            if not (isinstance(ready, dict) and ready.get("type") == "ready"):
                raise ChannelGarbage("an unexpected first message")
        except (ChannelClosed, ChannelTimeout, ChannelGarbage) as err:
            why = self._stderr_tail()
            self._stop()
            self.broken = f"the sandboxed grading worker did not start ({err}): {why or 'no message'}"
            raise GradingError(self.broken) from None
        self.process.stderr.close()
        self.timing["start"] += time.monotonic() - began
        began = time.monotonic()
        cut_short = budget < self.load_timeout
        limit = min(self.load_timeout, budget)
        deadline = time.monotonic() + limit * self.limits.wall_factor
        try:
            loaded = self._receive(deadline, "running the notebook's code cells", loading=not cut_short,
                                   cpu_seconds=limit)
        except WorkerTimeout:
            if cut_short:
                raise self._out_of_time() from None
            raise
        if not (isinstance(loaded, dict) and loaded.get("type") == "loaded" and isinstance(loaded.get("cells"), list)):
            self._stop()
            self.fatal = "the notebook's code wrote into the grader's channel while its cells ran"
            raise StudentError(self.fatal)
        self.load_report = [c for c in loaded["cells"] if isinstance(c, dict)]
        self.timing["cells"] += time.monotonic() - began

    def _stderr_tail(self) -> str:
        try:
            os.set_blocking(self.process.stderr.fileno(), False)
            return (self.process.stderr.read(4000) or b"").decode(errors="replace").strip()[-600:]
        except (OSError, ValueError, TypeError):
            return ""

    def _poll(self):
        """Called while waiting: a dead worker, or (unsandboxed) one that wrote too much, ends the wait."""
        if self.process is not None and self.process.poll() is not None:
            raise ChannelClosed(f"the process ended with exit status {self.process.returncode}")
        if self.kind == "unsandboxed" and self.job is not None:
            written = sandbox.disk_usage(self.job.work) + sum(
                _size(p) for p in sandbox.scratch_files_of(self.account, self._started_at))
            if written > self.limits.disk_bytes:
                raise ChannelClosed(f"it wrote {written // 2 ** 20} MB of files, more than the limit of "
                                    f"{self.limits.disk_bytes // 2 ** 20} MB")

    def _receive(self, deadline: float, doing: str, loading: bool = False, cpu_seconds: float | None = None):
        """The worker's next message; a wait ends at ``deadline`` (wall clock) or, where the CPU
        time can be counted, once the worker has used ``cpu_seconds`` of it while we waited."""
        poll, started = self._poll, self._student_cpu()
        if cpu_seconds is not None:
            # While we wait, the worker is the one to work. Time in which none of its threads
            # could run (sleeping, or stopped: SIGSTOP) is its own choice, charged as CPU time, so
            # a notebook that sleeps or stops itself holds a worker for its CPU budget, not the
            # wall factor times it; time it waited for a CPU that others held is not charged.
            idle, last = [0.0], [time.monotonic()]

            def poll():
                self._poll()
                now = time.monotonic()
                if self._runnable() is False:
                    idle[0] += now - last[0]
                last[0] = now
                used = (self._student_cpu() or started) - started if started is not None else 0.0
                if used + idle[0] > cpu_seconds:
                    raise ChannelTimeout(f"it used more than {cpu_seconds:g} s of CPU time (time it spent "
                                         f"sleeping or stopped counts)")
        try:
            return self.channel.receive(deadline, poll=poll)
        except ChannelTimeout:
            self._stop()
            message = f"stopped after running out of time while {doing} (an endless loop?)"
            if loading:
                self.fatal = message
            raise WorkerTimeout(message) from None
        except ChannelClosed as err:
            code = None
            if self.process is not None:
                try:  # the pipe closes a moment before the process is reaped: wait for its status
                    code = self.process.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    pass
            killed_for_memory = self.cgroup is not None and self.cgroup.out_of_memory_kills() > 0
            self._stop()
            message = (f"the notebook's code ended the grading process ({_describe_exit(code)}; {err}) "
                       f"while {doing}")
            if killed_for_memory:
                message = (f"the notebook ran out of memory: its processes together reached the limit of "
                           f"{self.limits.cgroup_memory_bytes // 2 ** 20} MB and the kernel stopped them "
                           f"while {doing}")
        except ChannelGarbage as err:
            self._stop()
            message = f"the notebook's code wrote into the grader's channel while {doing} ({err})"
        if loading:
            # The notebook's own code killed or hung the worker: running it again would too.
            self.fatal = message
        raise StudentError(message)

    # ------------------------------------------------------------------ time budgets
    def begin_check(self, task: str | None) -> None:
        """Called before each hidden check: its task's budget is charged for the time it takes."""
        self.current_task = task
        self.view_problems = []
        self._provenance = {}

    def _remember(self, value, call: Call, path: tuple = ()) -> None:
        """Note which call (and where in its result) each returned array came from."""
        if isinstance(value, np.ndarray):
            self._provenance[id(value)] = (value, call, path)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                self._remember(item, call, path + (i,))
        elif isinstance(value, dict):
            for key, item in value.items():
                self._remember(item, call, path + (key,))

    def comparison_failed(self, got, expected, rtol: float, atol: float) -> None:
        """A hidden check's expect_close failed on ``got``: evidence for the diagnoser, when the
        value came straight from a call."""
        entry = self._provenance.get(id(got))
        if entry is not None and entry[0] is got:
            self.diagnoser.failed(self.current_task, entry[1], entry[2], got, expected, rtol, atol)

    def comparison_passed(self, got, expected, rtol: float, atol: float) -> None:
        """A hidden check's expect_close passed on ``got``: a right output, which rules out the
        misconceptions that would have made it wrong (diagnosis.py)."""
        entry = self._provenance.get(id(got))
        if entry is not None and entry[0] is got:
            self.diagnoser.passed(self.current_task, entry[1], entry[2], expected, rtol, atol)

    def remaining(self) -> float:
        return self.task_seconds - self.spent.get(self.current_task, 0.0)

    def _charge(self, seconds: float) -> None:
        self.spent[self.current_task] = self.spent.get(self.current_task, 0.0) + seconds

    def _runnable(self) -> bool | None:
        """Whether a thread of the submission's processes runs or waits for a CPU (cgroups.runnable):
        its cgroup's threads, else the worker's process tree; None: nothing to look at."""
        if self.cgroup is not None:
            found = self.cgroup.runnable()
            if found is not None:
                return found
        if self.process is None or self.process.poll() is not None:
            return None
        return runnable(tree_threads(self.process.pid))

    def _student_cpu(self) -> float | None:
        """CPU seconds the submission's processes have used in this session (every worker it had),
        or None where this machine cannot count them."""
        if self.cgroup is None:
            return self._cpu_of_past_workers if Cgroup.available() else None
        now = self.cgroup.cpu_seconds()
        return None if now is None else self._cpu_of_past_workers + now

    def _clock(self) -> tuple[float, float | None]:
        return time.monotonic(), self._student_cpu()

    def _cost_since(self, mark: tuple[float, float | None]) -> float:
        """What the time since ``mark`` (a ``_clock()``) costs the task: the submission's CPU
        seconds, but at least the wall seconds over the wall factor; the wall seconds where CPU
        time cannot be counted."""
        wall = time.monotonic() - mark[0]
        cpu = self._student_cpu()
        if mark[1] is None or cpu is None:
            return wall
        return max(cpu - mark[1], wall / self.limits.wall_factor)

    def _out_of_time(self) -> StudentError:
        task = self.current_task
        if task not in self.out_of_time:
            self.out_of_time.append(task)
        return StudentError(f"out of time: the checks of {task} used up their {self.task_seconds:g} s and the rest "
                            f"of them did not run (is some of its code very slow, or stuck in a loop?)")

    # ------------------------------------------------------------------ requests
    def grader_function(self, fn) -> GraderFunction:
        """Offer ``fn`` (grader-side code) to the next request: the worker sees an opaque token
        it can call, valid only while that request runs."""
        token = secrets.token_hex(12)
        self._offered[token] = fn
        return GraderFunction(token)

    def substitute(self, target: str, kind: str, fn) -> dict:
        """One entry of a request's ``substitutes`` option (see worker/scenarios.py)."""
        return {target: {"kind": kind, "function": self.grader_function(fn)}}

    def request(self, scenario: str, *args, options: dict | None = None, views: bool = False,
                timeout: float | None = None, what: str | None = None):
        options = dict(options or {})
        lent = self.lend(self.current_task) if self.lend else None
        if lent and self.student_lib is not None:  # an earlier release's course_lib may lack a lent class
            lent = {target: {**spec, "optional": True} for target, spec in lent.items()}
        if lent:
            options["substitutes"] = {**lent, **(options.get("substitutes") or {})}
        functions, self._offered = self._offered, {}
        if self.remaining() <= 0:
            raise self._out_of_time()
        task = self.current_task
        if self.crashes.get(task, 0) >= MAX_CRASHES_PER_TASK:
            raise StudentError(f"the checks of {task} crashed or hung the grading process {MAX_CRASHES_PER_TASK} "
                               f"times; its remaining checks were skipped (the other tasks are graded as usual)")
        started = self._clock()
        try:
            if self.process is None:
                if self.starts == 0:
                    self._start(self.load_timeout)
                    started = self._clock()  # running the notebook's cells the first time is no task's time
                else:
                    self._start(self.remaining())
            value = self._exchange(scenario, args, options, views, functions, timeout, what or scenario)
            call = Call(scenario, tuple(args), {k: v for k, v in options.items() if k != "substitutes"})
            self._remember(value, call)
            return value
        finally:
            self._charge(self._cost_since(started))
            if self.process is None and not self.broken:  # this check crashed, hung or failed to restart it
                self.crashes[task] = self.crashes.get(task, 0) + 1

    def _exchange(self, scenario, args, options, with_views, functions, timeout, what):
        budget = self.remaining()
        if budget <= 0:
            raise self._out_of_time()
        requested = timeout or self.call_timeout
        limit = min(requested, budget)
        self._next_id += 1
        rid = self._next_id
        message = {"type": "request", "id": rid, "scenario": scenario, "args": list(args), "options": options,
                   "timeout": max(1, int(limit))}
        layouts = []
        if with_views:
            message["view_args"], layouts = self.rotation.views(args)
        sent = time.monotonic()
        deadline = sent + limit * self.limits.wall_factor + 5  # the worker's own CPU-time limit comes first
        try:
            self.channel.send(message, deadline)
        except (ChannelClosed, ChannelTimeout):
            self._stop()
            raise StudentError(f"the grading process was gone before {what} could run") from None
        cut_short = limit < requested  # the task's budget, not the call's own limit, set the deadline
        self._callbacks_left, self._refusal = MAX_CALLBACKS, None
        try:
            while True:
                reply = self._receive(deadline, f"running {what}", cpu_seconds=limit + 5)
                if not (isinstance(reply, dict) and reply.get("type") == "callback"):
                    break
                # Grader-side work stops when the worker's own alarm would (sent + limit): past
                # it, the worker has given up waiting and its answer would be out of step.
                self._answer_callback(reply, functions, sent + limit, deadline, what)
        except WorkerTimeout:
            if cut_short:
                raise self._out_of_time() from None
            raise
        if not (isinstance(reply, dict) and reply.get("type") == "reply" and reply.get("id") == rid):
            self._stop()
            raise StudentError("the notebook's code tampered with the grader's channel")
        if self._refusal:
            raise StudentError(self._refusal)
        if not reply.get("ok"):
            if cut_short and time.monotonic() - sent >= limit - 0.5:
                raise self._out_of_time()  # the worker's own alarm, set to what the budget had left
            raise StudentError(str(reply.get("error", "failed"))[:1500])
        if with_views and message.get("view_args") is not None:
            self._compare_views(what, reply, layouts)
        return reply.get("value")

    def _answer_callback(self, call: dict, functions: dict, stop_at: float, deadline: float, what: str,
                         depth: int = 0) -> None:
        """Run the grader-provided function the worker called, on its arguments, and send the answer.

        Its work is bounded: arguments of at most GRADER_READ_ELEMENTS array elements, a result
        the protocol can carry, no MemoryError, and (SIGALRM, in the grading process's main thread)
        no time past ``stop_at``. A refusal is answered as an error (the worker's code goes on, in
        step) and fails the check once the request ends (``self._refusal``); running out of time
        stops the worker (WorkerTimeout)."""
        self._count_message()
        fn = functions.get(call.get("token"))
        if fn is None:
            answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                      "error": "this grader-provided function is not available now"}
        else:
            args = call.get("args") if isinstance(call.get("args"), list) else []
            kwargs = call.get("kwargs") if isinstance(call.get("kwargs"), dict) else {}
            try:
                elements = _elements(args) + _elements(kwargs)
                if elements > GRADER_READ_ELEMENTS:
                    raise _Refused(f"its arguments hold {elements:.3g} array elements, more than the "
                                   f"{GRADER_READ_ELEMENTS} (2**{GRADER_READ_ELEMENTS.bit_length() - 1}) it works on")
                with _stopping_at(stop_at) if depth == 0 else contextlib.nullcontext():
                    if call.get("calls_back"):
                        args = [self._calling_back(functions, stop_at, deadline, what, depth)] + args
                    answer = {"type": "callback_reply", "ok": True, "value": fn(*args, **kwargs)}
            except _OutOfTime:
                self._stop()
                raise WorkerTimeout(f"stopped after running out of time while running {what}: the grader-provided "
                                    f"functions it called, on the arguments it gave them, ran past the time the "
                                    f"check allows") from None
            except (StudentError, GradingError):
                raise  # the channel failed while the function called back into the worker
            except _Abandoned:
                answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                          "error": "the function the grader called back raised"}
            except _Refused as err:
                answer = self._refuse(what, str(err))
            except MemoryError:
                answer = self._refuse(what, "on its arguments it needed more memory than the grader allows")
            except (ValueError, TypeError) as err:
                answer = {"type": "callback_reply", "ok": False, "kind": type(err).__name__, "error": str(err)[:500]}
            except Exception as err:  # noqa: BLE001 - grader code on the student's arguments
                answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                          "error": f"{type(err).__name__}: {str(err)[:500]}"}
        try:
            try:
                self.channel.send(answer, deadline)
            except ValueRefused as err:  # checked before a byte is written: the channel is still in step
                self.channel.send(self._refuse(what, f"its result cannot be sent back ({err})"), deadline)
        except (ChannelClosed, ChannelTimeout):
            self._stop()
            raise StudentError("the grading process stopped listening") from None

    def _refuse(self, what: str, why: str) -> dict:
        """The answer to a call the grader will not complete; the check fails with ``why``."""
        message = (f"{what} called a grader-provided function in a way it refuses: {why}. The checks call it on "
                   f"small arrays; does your code pass it something much larger, or loop over it?")
        self._refusal = self._refusal or message
        return {"type": "callback_reply", "ok": False, "kind": "RuntimeError", "error": message[:500]}

    def _count_message(self) -> None:
        self._callbacks_left -= 1
        if self._callbacks_left < 0:
            self._stop()
            raise StudentError(f"the notebook's code sent more than {MAX_CALLBACKS} calls and values to "
                               f"grader-provided functions during one check")

    def _calling_back(self, functions: dict, stop_at: float, deadline: float, what: str, depth: int):
        """The ``f`` a grader function of kind "calls_back" gets: f(*point) sends the point to the
        worker, which evaluates its own function there (the student's f) and sends the value back.
        Meanwhile that function may call grader functions itself: those are answered here too."""
        def evaluate(*point):
            try:
                self.channel.send({"type": "evaluate", "args": list(point)}, deadline)
            except (ChannelClosed, ChannelTimeout):
                self._stop()
                raise StudentError("the grading process stopped listening") from None
            while True:
                message = self._receive(deadline, f"running {what}")
                kind = message.get("type") if isinstance(message, dict) else None
                if kind == "callback" and depth < MAX_CALLBACK_DEPTH:
                    self._answer_callback(message, functions, stop_at, deadline, what, depth + 1)
                    continue
                if kind != "evaluated":
                    self._stop()
                    raise StudentError("the notebook's code tampered with the grader's channel")
                self._count_message()
                if not message.get("ok"):
                    raise _Abandoned()
                return message.get("value")
        return evaluate

    def _compare_views(self, what: str, reply: dict, layouts: list[str]) -> None:
        viewed = reply.get("view")
        described = " and ".join(sorted({views.DESCRIPTIONS[layout] for layout in layouts}))
        if not isinstance(viewed, dict):
            problem = "it did not run"
        elif not viewed.get("ok"):
            problem = f"it raised {str(viewed.get('error', ''))[:300]}"
        else:
            problem = views.difference(reply.get("value"), viewed.get("value"))
        if problem:
            self.view_problems.append(
                f"{what} is right when its inputs are fresh row-major arrays, but with the same values given as "
                f"{described}, {problem}: does it call .compact() where it needs a row-major array?")

    def loaded_cell_errors(self) -> list[str]:
        # The worker reports the cells in the order it was given them: named here, from the grader's
        # own list, by their place in the student's notebook (not by the worker's word).
        return [f"{cell_label(cell)}: {str(report.get('error'))[:300]}"
                for cell, report in zip(self.cells, self.load_report) if not report.get("ok")]

    # ------------------------------------------------------------------ one wrapper per scenario
    def forward(self, op, attrs, *arrays, substitutes=None):
        value = self.request("forward", op, attrs, list(arrays), views=True, what=f"{op}.compute",
                             options={"substitutes": substitutes} if substitutes else None)
        return _array(value, f"{op}.compute")

    def gradient(self, op, attrs, arrays, out_grad, output=None, reevaluate=None, substitutes=None):
        """One array per input; with ``reevaluate``, {"grads", "reevaluated"} (see worker/scenarios.py)."""
        options = {k: v for k, v in (("output", output), ("reevaluate", reevaluate),
                                      ("substitutes", substitutes)) if v is not None}
        value = self.request("gradient", op, attrs, list(arrays), out_grad, views=True, what=f"{op}.gradient",
                             options=options)
        if reevaluate is None:
            return _arrays(value, len(arrays), f"{op}.gradient")
        if not isinstance(value, dict) or set(value) != {"grads", "reevaluated"}:
            raise StudentError(f"{op}.gradient: the result cannot be graded")
        return {key: _arrays(value[key], len(arrays), f"{op}.gradient") for key in value}

    def call(self, target, *arrays, as_tensors=False, out_grad=None, reevaluate=None, substitutes=None, **kwargs):
        """The function's result; with ``out_grad``, {"out", "grads"} after backward; with
        ``reevaluate`` (new input values), {"out", "again"}: its graph evaluated at those values."""
        what = target.split(":")[-1]
        options = {k: v for k, v in (("reevaluate", reevaluate), ("substitutes", substitutes)) if v is not None}
        value = self.request("call", target, list(arrays), kwargs, as_tensors, out_grad, views=True, what=what,
                             options=options)
        if reevaluate is not None:
            if not isinstance(value, dict) or set(value) != {"out", "again"}:
                raise StudentError(f"{what}: the result cannot be graded")
            return {"out": _array(value["out"], what), "again": _array(value["again"], what)}
        if out_grad is not None:
            if not isinstance(value, dict) or set(value) != {"out", "grads"}:
                raise StudentError(f"{what}: the result cannot be graded")
            grads = expect.as_list(value["grads"], f"{what} backward (one gradient per input)", len(arrays))
            return {"out": _array(value["out"], what),
                    "grads": [None if g is None else _array(g, f"{what} backward") for g in grads]}
        return value

    def ndarray_steps(self, array, steps):
        """The view the steps end with, read by the grader from its buffer: values, shape, strides,
        offset and whether it is compact (row-major, offset 0, covering its whole buffer)."""
        what = "the NDArray the steps gave"
        view = self._read_view(self.request("ndarray_steps", array, steps, what="the NDArray methods"), what)
        self._remember({"values": view["values"]}, Call("ndarray_steps", (array, steps), {}))
        return view

    def forward_view(self, op, attrs, *arrays):
        """``op.compute``'s result as ndarray_steps reads a view: values, shape, strides, offset, compact."""
        what = f"{op}.compute"
        return self._read_view(self.request("forward_view", op, attrs, list(arrays), what=what), what)

    def _read_view(self, got, what: str) -> dict:
        got = expect.as_mapping(got, what, ("buffer", "shape", "strides", "offset"))
        buffer = expect.as_array(got["buffer"], f"{what}: its buffer")
        shape, strides = (tuple(expect.as_int(n, f"{what}: its {key}")
                                for n in expect.as_list(got[key], f"{what}: its {key}")) for key in ("shape", "strides"))
        if len(strides) != len(shape):
            raise StudentError(f"{what}: {len(strides)} strides for a shape of {len(shape)} axes")
        view = StridedView(buffer.reshape(-1), shape, strides, expect.as_int(got["offset"], f"{what}: its offset"))
        try:
            values = views.values_of(view)
        except ValueError as err:
            raise StudentError(f"{what} cannot be read: {err}") from None
        compact = (view.strides == views.compact_strides(view.shape) and view.offset == 0
                   and buffer.size == int(np.prod(view.shape)))
        return {"values": values, "shape": list(view.shape), "strides": list(view.strides), "offset": view.offset,
                "compact": bool(compact)}

    def variable(self, name):
        return self.request("variable", name, what=f"the variable {name}")

    def loss_scaler_run(self, settings, steps):
        """The records of the loss_scaler_run scenario (one per step), and the same run as columns
        {"scale", "good", "skipped", "finite"}: arrays the diagnoser can trace back to this call
        (the records' numbers are plain floats, which it cannot)."""
        what = "LossScaler: the steps' records"
        records = expect.as_records(self.request("loss_scaler_run", settings, steps, what="LossScaler"), what,
                                    ("finite", "grads", "scale", "good", "skipped"), n=len(steps))
        for i, (record, step) in enumerate(zip(records, steps)):
            expect.as_list(record["grads"], f"{what}[{i}]['grads'] (one per parameter)", len(step))
        read = {"scale": expect.as_float, "good": expect.as_int, "skipped": expect.as_int, "finite": expect.as_bool}
        columns = {key: np.array([float(reader(r[key], f"{what}[{i}][{key!r}]")) for i, r in enumerate(records)])
                   for key, reader in read.items()}
        self._remember(columns, Call("loss_scaler_run", (settings, steps), {}))
        return records, columns

    def check_flags(self, check, implementations, args=None, seconds_each: int = 20):
        """The student's check run on each implementation (course_lib names, or grader functions
        from ``grader_function``): one outcome string each, in the same order."""
        n = len(implementations)
        value = self.request("check_flags", check, list(implementations), args, seconds_each,
                             timeout=max(self.call_timeout, seconds_each * n + 5), what=check.split(":")[-1])
        if not isinstance(value, list) or len(value) != n or not all(isinstance(v, str) for v in value):
            raise StudentError(f"{check}: the outcomes cannot be graded")
        return value


class _Refused(Exception):
    """Grader-side work the grader will not do on these arguments (too large)."""


class _Abandoned(BaseException):
    """The worker's function raised while a grader function called it back: that function unwinds.
    (A BaseException: grader code that catches Exception must not carry on past it.)"""


class _OutOfTime(BaseException):
    """Raised by SIGALRM when grader-side work on a submission's arguments reaches its deadline."""


def _raise_out_of_time(signum, frame):
    raise _OutOfTime()


@contextlib.contextmanager
def _stopping_at(deadline: float):
    """Grader-side work inside stops (``_OutOfTime``) at ``deadline`` (time.monotonic()). Signals
    reach only the main thread: elsewhere (no grading process runs suites there) the size bounds
    alone hold."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    seconds = deadline - time.monotonic()
    if seconds <= 0:
        raise _OutOfTime()
    began = time.monotonic()
    previous = signal.signal(signal.SIGALRM, _raise_out_of_time)
    previous_delay, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if previous_delay:  # someone else's alarm (a test runner's timeout, say) keeps its time
            signal.setitimer(signal.ITIMER_REAL, max(0.001, previous_delay - (time.monotonic() - began)))


def _elements(value, depth: int = 0) -> int:
    """Array elements in a decoded value (arrays, lists and dicts of them)."""
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, StridedView):
        return int(value.buffer.size)
    if depth > 64:
        return 0  # the decoder refuses values nested this deep before they get here
    if isinstance(value, (list, tuple)):
        return sum(_elements(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return sum(_elements(v, depth + 1) for v in value.values())
    return 0


def _array(value, what: str) -> np.ndarray:
    """A result that must be one array (expect.py: the readers every check uses)."""
    return expect.as_array(value, what)


def _arrays(value, n: int, what: str) -> list:
    """The gradients of an op with ``n`` inputs: a list of ``n`` arrays."""
    grads = expect.as_list(value, f"{what} (one gradient per input)", n)
    return [_array(v, f"{what}, gradient {i}") for i, v in enumerate(grads)]


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _remove(path: Path) -> None:
    import shutil

    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except OSError:
        pass


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code > 128 and code - 128 in signal.Signals._value2member_map_:
        code = -(code - 128)  # bubblewrap reports a child killed by signal N as 128 + N
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hint = {"SIGKILL": "killed: out of memory or a resource limit", "SIGXCPU": "CPU-time limit",
                "SIGSEGV": "crashed"}.get(name, "killed")
        return f"exit status {name}, {hint}"
    return f"exit status {code}, " + ("sys.exit/os._exit" if code else "exited")

