"""The grader's side of a worker: start it, send scenario requests, read answers, survive crashes.

    with StudentSession("04_conv_backward", Path("submitted/alice/04_conv_backward/04_conv_backward.ipynb")) as s:
        out = s.forward("PowerScalar", {"scalar": 3}, x)

A request that fails raises StudentError with a message meant for the student's feedback. A
worker that crashes, hangs or is killed costs the requests it was running; the next request
starts a fresh worker (a few times at most per submission).
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat

from course_lib import tasks

from .. import build
from ..student_lib import build_student_lib
from . import sandbox, values

MAX_STARTS = 3


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


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def program_cells(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[dict]:
    """The code the worker runs: the submission's code cells in order, with test cells left out
    and locked cells replaced by the release's own text (a student cannot retype them)."""
    canonical = {_meta(c)["grade_id"]: c for c in release.cells if _meta(c).get("grade_id")}
    tests = {gid for gid, c in canonical.items() if _meta(c).get("grade") and not _meta(c).get("solution")}
    cells = []
    for cell in submitted.cells:
        if cell.get("cell_type") != "code":
            continue
        meta = _meta(cell)
        grade_id = meta.get("grade_id")
        if grade_id in tests or (meta.get("grade") and not meta.get("solution")):
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
    def __init__(self, assignment: str, notebook: Path, release_notebook: Path | None = None,
                 course_root: Path | None = None, cell_timeout: int = 60, call_timeout: int = 30,
                 load_timeout: int = 240, limits: sandbox.Limits | None = None):
        if assignment not in tasks.ASSIGNMENTS:
            raise ValueError(f"unknown assignment {assignment!r}")
        self.assignment = assignment
        self.notebook = Path(notebook)
        self.release_notebook = release_notebook or build.release_notebook(assignment)
        self.course_root = course_root
        self.cell_timeout, self.call_timeout, self.load_timeout = cell_timeout, call_timeout, load_timeout
        self.limits = limits or sandbox.Limits()
        self.starts = 0
        self.timeouts: dict[str, int] = {}  # scenario:target -> calls that did not finish
        self.process = None
        self.load_report: list[dict] = []
        self.fatal: str | None = None
        self._next_id = 0
        self.jobdir = Path(tempfile.mkdtemp(prefix="course-job-"))
        os.chmod(self.jobdir, 0o777)
        try:
            submitted = read_notebook(self.notebook)
            release = nbformat.read(str(self.release_notebook), as_version=4)
            self.cells = program_cells(submitted, release)
        except StudentError as err:
            self.fatal = str(err)
            self.cells = []
        build_student_lib(assignment, self.jobdir / "course_lib")

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._stop()
        shutil.rmtree(self.jobdir, ignore_errors=True)

    def _stop(self):
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait()
            for stream in (self._requests, self._responses):
                try:
                    stream.close()
                except OSError:
                    pass
            self.cgroup.remove()
            self.process = None

    def _start(self):
        if self.fatal:
            raise StudentError(self.fatal)
        if self.starts >= MAX_STARTS:
            raise StudentError(f"the notebook's code crashed or hung {MAX_STARTS} times; remaining checks skipped")
        self.starts += 1
        for sub in ("in", "out"):
            folder = self.jobdir / sub
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            os.chmod(folder, 0o777)
        (self.jobdir / "job.json").write_text(json.dumps({"cells": self.cells, "cell_timeout": self.cell_timeout}))
        request_read, request_write = os.pipe()
        response_read, response_write = os.pipe()
        self.cgroup = sandbox.Cgroup(self.limits)
        drop = os.geteuid() == 0 and not sandbox.bubblewrap() and sandbox.nobody_can_run_python()
        self.process = subprocess.Popen(
            sandbox.worker_command(self.jobdir, request_read, response_write, self.course_root),
            pass_fds=(request_read, response_write), env=sandbox.worker_env(self.jobdir), cwd=self.jobdir,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=sandbox.preexec(self.limits, self.cgroup, drop))
        os.close(request_read)
        os.close(response_write)
        self._requests = os.fdopen(request_write, "w", buffering=1)
        self._responses = os.fdopen(response_read, "r", buffering=1)
        try:
            loaded = self._read(self.load_timeout, "running the notebook's code cells")
        except StudentError as err:
            # The notebook's own code killed or hung the worker: running it again would too.
            self.fatal = str(err)
            raise
        self.load_report = loaded.get("cells", [])

    def _read(self, timeout: float, doing: str) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stop()
                raise StudentError(f"stopped after {timeout:.0f} s while {doing} (an endless loop?)")
            ready, _, _ = select.select([self._responses], [], [], min(remaining, 1.0))
            if ready:
                line = self._responses.readline()
                if not line:
                    code = self.process.wait()
                    self._stop()
                    raise StudentError(f"the notebook's code ended the grading process (exit status {code}, "
                                       f"{_describe_exit(code)}) while {doing}")
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    self._stop()
                    raise StudentError(f"the notebook's code wrote into the grader's channel while {doing}") from None
            elif self.process.poll() is not None:
                code = self.process.returncode
                self._stop()
                raise StudentError(f"the notebook's code ended the grading process (exit status {code}, "
                                   f"{_describe_exit(code)}) while {doing}")

    # ------------------------------------------------------------------ requests
    def request(self, scenario: str, *args, timeout: float | None = None):
        key = f"{scenario}:{args[0] if args else ''}"
        if self.timeouts.get(key, 0) >= 2:
            raise StudentError(f"skipped: earlier runs of {scenario} {args[0] if args else ''} did not finish "
                               f"(out of time, or the process died)")
        if self.process is None:
            self._start()
        self._next_id += 1
        rid = self._next_id
        encoded = values.Encoder(self.jobdir / "in", f"q{rid}_").encode(list(args), "the request")
        for path in (self.jobdir / "in").iterdir():
            os.chmod(path, 0o644)
        timeout = timeout or self.call_timeout
        try:
            self._requests.write(json.dumps({"id": rid, "scenario": scenario, "args": encoded,
                                             "timeout": int(timeout)}) + "\n")
        except (BrokenPipeError, OSError):
            self._stop()
            raise StudentError(f"the grading process was gone before {scenario} could run") from None
        try:
            reply = self._read(timeout + 15, f"running {scenario}")
        except StudentError:
            self.timeouts[key] = self.timeouts.get(key, 0) + 1
            raise
        if not reply.get("ok") and "took longer than" in reply.get("error", ""):
            self.timeouts[key] = self.timeouts.get(key, 0) + 1
        if reply.get("id") != rid:
            self._stop()
            raise StudentError("the grader's channel was tampered with")
        if not reply.get("ok"):
            raise StudentError(reply.get("error", "failed"))
        try:
            return values.decode(reply["value"], self.jobdir / "out")
        except (values.ValueRefused, OSError, ValueError) as err:
            raise StudentError(f"the result cannot be graded: {err}") from None

    def loaded_cell_errors(self) -> list[str]:
        return [f"{c['cell']}: {c['error']}" for c in self.load_report if not c.get("ok")]

    # Convenience wrappers, one per scenario (see scenarios.py).
    def forward(self, op, attrs, *arrays):
        return self.request("forward", op, attrs, list(arrays))

    def gradient(self, op, attrs, arrays, out_grad, graph=False):
        return self.request("gradient", op, attrs, list(arrays), out_grad, graph)

    def call(self, target, *arrays, as_tensors=False, out_grad=None, **kwargs):
        return self.request("call", target, list(arrays), kwargs, as_tensors, out_grad)

    def ndarray_steps(self, array, steps):
        return self.request("ndarray_steps", array, steps)

    def variable(self, name):
        return self.request("variable", name)

    def check_flags(self, check, implementation, args=None):
        return self.request("check_flags", check, implementation, args)


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code > 128 and code - 128 in signal.Signals._value2member_map_:
        code = -(code - 128)  # bubblewrap reports a child killed by signal N as 128 + N
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hint = {"SIGKILL": "killed: out of memory or a resource limit", "SIGXCPU": "CPU-time limit",
                "SIGSEGV": "crashed"}.get(name, "killed")
        return f"{name}, {hint}"
    return "sys.exit/os._exit" if code else "exited"
