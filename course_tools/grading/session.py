"""The grader's side of a worker: start it, send scenario requests, read answers, survive anything.

    with StudentSession("04_conv_backward", Path("submitted/alice/04_conv_backward/04_conv_backward.ipynb")) as s:
        out = s.forward("PowerScalar", {"scalar": 3}, x)

Whose fault a failure is decides what it becomes:

    StudentError   the submission's code failed, hung, crashed its process, or answered with
                   something that cannot be graded: the check fails, with a message for the student
    GradingError   the grader could not grade (no sandbox, the worker's own start-up failed):
                   reported to the instructor, never turned into a score

Time: each task's checks share a budget (COURSE_GRADER_TASK_SECONDS, default 120 s, restarts of
a crashed worker included). A task that uses it up loses its remaining checks, with a message
saying so; the other tasks are graded as usual. The budget, like every time limit of a worker
(sandbox.Limits), counts the submission's own CPU time, read from its cgroup (its processes,
children included, and nobody else's): a busy neighbour slows an honest submission down but
cannot use up its time. Each wait also ends after ``wall_factor`` times its seconds on the
wall clock, and a task is charged at least its wall time over that factor, so code that sleeps
or blocks runs out too. Where the machine cannot count a worker's CPU time (no cgroup), the
wall clock is all there is, as before.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import numpy as np

from course_lib import tasks

from .. import build
from ..demonstrations import is_demonstration
from . import sandbox, views
from .cgroups import Cgroup
from .channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout
from .diagnosis import Call, Diagnoser
from .worker.protocol import GraderFunction, StridedView, ValueRefused

MAX_STARTS = 3
MAX_CALLBACKS = 20000
READY_TIMEOUT_S = 60
DEFAULT_TASK_SECONDS = sandbox._setting("COURSE_GRADER_TASK_SECONDS", 120)

# The session being graded. It lives here, not in suite.py, because `python -m
# course_tools.grading.suite` runs suite.py as __main__, a second copy of that module.
CURRENT: list["StudentSession"] = []


def current_session() -> "StudentSession":
    """The session being graded (autograder/conftest.py hands it to tests as ``student``)."""
    if not CURRENT:
        raise RuntimeError("hidden suites run through course_tools.grading.suite.run_suite")
    return CURRENT[-1]


class StudentError(Exception):
    """The student's code failed, or returned something that cannot be graded."""


class WorkerTimeout(StudentError):
    """The worker did not answer in time (it was stopped)."""


class GradingError(Exception):
    """The grader could not grade: a failure of the grading machinery, never the student's."""


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
    for cell in submitted.cells:
        if cell.get("cell_type") != "code":
            continue
        meta = _meta(cell)
        grade_id = meta.get("grade_id")
        if grade_id in tests or grade_id in shows or (meta.get("grade") and not meta.get("solution")):
            continue
        if grade_id in canonical and _meta(canonical[grade_id]).get("locked"):
            cells.append({"grade_id": grade_id, "source": canonical[grade_id].source})
        else:
            cells.append({"grade_id": grade_id, "source": cell.get("source", "")})
    return cells


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook, or StudentError saying what is wrong with the file."""
    if not path.exists():
        raise StudentError(f"no notebook at {path.name}: was it renamed or deleted?")
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as err:  # noqa: BLE001 - any parse failure is the file's fault
        raise StudentError(f"{path.name} is not a readable notebook ({type(err).__name__}: {str(err)[:200]})") from None


class StudentSession:
    def __init__(self, assignment: str, notebook: Path, release_notebook: Path | None = None, cell_timeout: int = 60, call_timeout: int = 30,
                 load_timeout: int = 240, limits: sandbox.Limits | None = None, task_seconds: float | None = None):
        if assignment not in tasks.ASSIGNMENTS:
            raise ValueError(f"unknown assignment {assignment!r}")
        self.assignment = assignment
        self.notebook = Path(notebook)
        self.release_notebook = release_notebook or build.release_notebook(assignment)
        self.cell_timeout, self.call_timeout, self.load_timeout = cell_timeout, call_timeout, load_timeout
        self.limits = limits or sandbox.Limits()
        self.task_seconds = float(task_seconds or DEFAULT_TASK_SECONDS)
        self.kind: str | None = None
        self.starts = 0
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
        try:
            submitted = read_notebook(self.notebook)
            release = nbformat.read(str(self.release_notebook), as_version=4)
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
        if self.starts >= MAX_STARTS:
            raise StudentError(f"the notebook's code crashed or hung {MAX_STARTS} times; remaining checks skipped")
        began = time.monotonic()  # the sandbox's set-up counts as its start
        try:
            self.kind = sandbox.sandbox_kind()
            self.account = sandbox.grading_account()
            if self.job is None:
                self.job = sandbox.JobFolder(self.assignment, self.cells, self.cell_timeout, self.account,
                                             self.limits.wall_factor)
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
        if cpu_seconds is not None and started is not None:
            def poll():
                self._poll()
                if (self._student_cpu() or started) - started > cpu_seconds:
                    raise ChannelTimeout(f"it used more than {cpu_seconds:g} s of CPU time")
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

    def remaining(self) -> float:
        return self.task_seconds - self.spent.get(self.current_task, 0.0)

    def _charge(self, seconds: float) -> None:
        self.spent[self.current_task] = self.spent.get(self.current_task, 0.0) + seconds

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
        if lent:
            options["substitutes"] = {**lent, **(options.get("substitutes") or {})}
        functions, self._offered = self._offered, {}
        if self.remaining() <= 0:
            raise self._out_of_time()
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
        callbacks = 0
        cut_short = limit < requested  # the task's budget, not the call's own limit, set the deadline
        while True:
            try:
                reply = self._receive(deadline, f"running {what}", cpu_seconds=limit + 5)
            except WorkerTimeout:
                if cut_short:
                    raise self._out_of_time() from None
                raise
            if isinstance(reply, dict) and reply.get("type") == "callback" and callbacks < MAX_CALLBACKS:
                callbacks += 1
                self._answer_callback(reply, functions, deadline)
                continue
            break
        if not (isinstance(reply, dict) and reply.get("type") == "reply" and reply.get("id") == rid):
            self._stop()
            raise StudentError("the notebook's code tampered with the grader's channel")
        if not reply.get("ok"):
            if cut_short and time.monotonic() - sent >= limit - 0.5:
                raise self._out_of_time()  # the worker's own alarm, set to what the budget had left
            raise StudentError(str(reply.get("error", "failed"))[:1500])
        if with_views and message.get("view_args") is not None:
            self._compare_views(what, reply, layouts)
        return reply.get("value")

    def _answer_callback(self, call: dict, functions: dict, deadline: float) -> None:
        fn = functions.get(call.get("token"))
        if fn is None:
            answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                      "error": "this grader-provided function is not available now"}
        else:
            args = call.get("args") if isinstance(call.get("args"), list) else []
            kwargs = call.get("kwargs") if isinstance(call.get("kwargs"), dict) else {}
            try:
                answer = {"type": "callback_reply", "ok": True, "value": fn(*args, **kwargs)}
            except (ValueError, TypeError) as err:
                answer = {"type": "callback_reply", "ok": False, "kind": type(err).__name__, "error": str(err)[:500]}
            except Exception as err:  # noqa: BLE001 - grader code on the student's arguments
                answer = {"type": "callback_reply", "ok": False, "kind": "RuntimeError",
                          "error": f"{type(err).__name__}: {str(err)[:500]}"}
        try:
            self.channel.send(answer, deadline)
        except ValueRefused as err:
            raise GradingError(f"a grader-provided function returned a value that cannot cross: {err}") from None
        except (ChannelClosed, ChannelTimeout):
            self._stop()
            raise StudentError("the grading process stopped listening") from None

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
        return [f"{c.get('cell')}: {str(c.get('error'))[:300]}" for c in self.load_report if not c.get("ok")]

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
            if not isinstance(value, dict) or set(value) != {"out", "grads"} or not isinstance(value["grads"], list):
                raise StudentError(f"{what}: the result cannot be graded")
            return {"out": _array(value["out"], what),
                    "grads": [None if g is None else _array(g, f"{what} backward") for g in value["grads"]]}
        return value

    def ndarray_steps(self, array, steps):
        """The view the steps end with, read by the grader from its buffer: values, shape, strides,
        offset and whether it is compact (row-major, offset 0, covering its whole buffer)."""
        got = self.request("ndarray_steps", array, steps, what="the NDArray methods")
        try:
            buffer = _array(got["buffer"], "the NDArray's buffer")
            view = StridedView(buffer.reshape(-1), tuple(int(n) for n in got["shape"]),
                               tuple(int(s) for s in got["strides"]), int(got["offset"]))
            values = views.values_of(view)
        except StudentError:
            raise
        except (KeyError, TypeError, ValueError) as err:
            raise StudentError(f"the NDArray the steps gave cannot be read: {err}") from None
        compact = (view.strides == views.compact_strides(view.shape) and view.offset == 0
                   and buffer.size == int(np.prod(view.shape)))
        self._remember({"values": values}, Call("ndarray_steps", (array, steps), {}))
        return {"values": values, "shape": list(view.shape), "strides": list(view.strides), "offset": view.offset,
                "compact": bool(compact)}

    def variable(self, name):
        return self.request("variable", name, what=f"the variable {name}")

    def loss_scaler_run(self, settings, steps):
        """The records of the loss_scaler_run scenario (one per step), and the same run as columns
        {"scale", "good", "skipped", "finite"}: arrays the diagnoser can trace back to this call
        (the records' numbers are plain floats, which it cannot)."""
        records = self.request("loss_scaler_run", settings, steps, what="LossScaler")
        try:
            if len(records) != len(steps):
                raise ValueError("one record per step")
            columns = {key: np.array([float(r[key]) for r in records]) for key in ("scale", "good", "skipped", "finite")}
        except (KeyError, TypeError, ValueError) as err:
            raise StudentError(f"LossScaler: the result cannot be graded ({err})") from None
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


def _array(value, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise StudentError(f"{what} returned a {type(value).__name__}, expected an array")
    return value


def _arrays(value, n: int, what: str) -> list:
    if not isinstance(value, list) or len(value) != n:
        raise StudentError(f"{what} should give one gradient per input ({n}), got "
                           f"{len(value) if isinstance(value, list) else type(value).__name__}")
    return [_array(v, what) for v in value]


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
