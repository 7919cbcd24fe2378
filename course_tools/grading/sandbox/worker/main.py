"""The worker process: runs a submission's code cells, then answers the grader's requests.

Started by the grader (sandbox.py) as

    python -I -S -c BOOTSTRAP UID GID PATHS JOB_DIR WORK_DIR REQUEST_FD RESPONSE_FD

BOOTSTRAP drops to the grading account (when started as root) before anything else runs,
puts PATHS (the job's read-only folder and the packages the worker may import) on sys.path and
calls main(). JOB_DIR holds job.json (the cells to run) and this package; WORK_DIR is the only
writable folder. Messages are frames on two pipes (protocol.py); the student's prints go to
/dev/null, never into the protocol.

The order of messages tells the grader whose fault a failure is: before "ready" only the
grader's own code has run (a failure there is a grading error); from "ready" on, the
submission's code runs in this process and anything it sends is untrusted.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path

from . import protocol, timer
from .timer import CellTimeout, _start_timer, _stop_timer, timeout_message

REQUEST_FD = RESPONSE_FD = -1
MAIN_PID = os.getpid()
BLOCKED_PACKAGES = ("torch", "functorch", "torchvision")


def _memory_limit() -> str:
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return f"{limit // 2 ** 20} MB per process" if limit != resource.RLIM_INFINITY else "the machine's memory"


def out_of_memory(err: MemoryError) -> str:
    """What a cell or call that raised MemoryError is told: the notebook ran out of memory."""
    return f"{short_error(err, 300)}: the notebook ran out of memory (its limit is {_memory_limit()})"


class _Blocked:
    """A meta-path finder that refuses some top-level packages (a student machine has no PyTorch)."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED_PACKAGES:
            raise ModuleNotFoundError(f"No module named {name!r} (not available while grading)", name=name)
        return None


def short_error(err: BaseException, limit: int = 1500) -> str:
    text = "".join(traceback.format_exception_only(type(err), err)).strip()
    return text[:limit]


def _strip_magics(source: str) -> str:
    # IPython syntax (%matplotlib, !pip) is not Python; the worker runs plain Python.
    out = []
    for line in source.splitlines():
        stripped = line.lstrip()
        out.append(line[: len(line) - len(stripped)] + "pass" if stripped.startswith(("%", "!")) else line)
    return "\n".join(out)


def _forked_child_exits():
    # Student code may fork; a child must never go on as a second worker on the same pipes.
    if os.getpid() != MAIN_PID:
        os._exit(0)


def send(message: dict) -> None:
    protocol.write_frame(RESPONSE_FD, message)


class GraderCall:
    """A function that runs in the grader: calling it sends the arguments there and waits.

    Planted bugs and reference pieces a check needs reach the student's code this way: their
    code never enters this process, and the token says nothing about what they are."""
    __slots__ = ("_token",)

    def __init__(self, token: str):
        self._token = token

    def __repr__(self):
        return "<function provided by the grader>"

    def __call__(self, *args, **kwargs):
        return self._result(self._ask({"type": "callback", "token": self._token, "args": list(args),
                                       "kwargs": kwargs}))

    def calling_back(self, local, *args, **kwargs):
        """The grader's function of (local, *args, **kwargs), where ``local`` is a function of this
        process (the student's f): the grader runs its code and asks for local's values one point at
        a time ({"type": "evaluate", "args": [...]}), until it sends its result. Values cross, code
        does not. An exception of ``local`` ends the grader's computation and is raised here."""
        reply = self._ask({"type": "callback", "token": self._token, "args": list(args), "kwargs": kwargs,
                           "calls_back": True})
        while isinstance(reply, dict) and reply.get("type") == "evaluate":
            try:
                value = local(*reply.get("args", []))
                protocol.encode(value)  # refused here, as local's own failure, what cannot cross
            except BaseException:
                self._ask({"type": "evaluated", "ok": False})  # the grader unwinds, then answers
                raise
            reply = self._ask({"type": "evaluated", "ok": True, "value": value})
        return self._result(reply)

    @staticmethod
    def _ask(message: dict):
        send(message)
        return protocol.read_frame(REQUEST_FD, GraderCall)

    @staticmethod
    def _result(reply):
        if not isinstance(reply, dict) or reply.get("type") != "callback_reply":
            raise RuntimeError("the grader did not answer the call")
        if not reply.get("ok"):
            kind = {"ValueError": ValueError, "TypeError": TypeError}.get(reply.get("kind"), RuntimeError)
            raise kind(reply.get("error", "failed"))
        return reply["value"]


def run_cells(cells: list[dict], ns: dict, cell_timeout: int) -> list[dict]:
    import time

    report = []
    for index, cell in enumerate(cells):
        name = cell.get("grade_id") or f"cell {cell.get('position', index + 1)}"
        _start_timer(cell_timeout)
        started = time.perf_counter()
        try:
            code = compile(_strip_magics(cell["source"]), f"<{name}>", "exec")
            exec(code, ns)  # noqa: S102 - this is the student's code, inside the sandbox
            report.append({"cell": name, "ok": True, "seconds": round(time.perf_counter() - started, 3)})
        except CellTimeout:
            report.append({"cell": name, "ok": False, "error": timeout_message(cell_timeout)})
        except MemoryError as err:
            report.append({"cell": name, "ok": False, "error": out_of_memory(err)})
        except BaseException as err:  # noqa: BLE001 - SystemExit and friends are the student's too
            report.append({"cell": name, "ok": False, "error": short_error(err)})
        finally:
            _forked_child_exits()
            _stop_timer()
    return report


def _run(scenario, ns, args, options) -> dict:
    """The scenario's value, and the arrays it handed to the student's code as read back after
    (handed.py; only for the scenarios that hand any)."""
    from . import handed  # imported with the scenarios, after the worker's start (see main)

    handed.take()
    value = scenario(ns, *args, **options)
    answer = {"value": value}
    inputs_after = handed.take()
    if inputs_after is not None:
        answer["inputs_after"] = inputs_after
    protocol.encode(answer)  # refuses here, as this call's failure, what cannot cross
    return answer


def serve(ns: dict, scenarios: dict, substituted) -> None:
    """Answer requests until the grader closes the pipe. A request may carry ``view_args``: the
    same call with its inputs as non-compact views, run after the first and reported beside it."""
    while True:
        try:
            request = protocol.read_frame(REQUEST_FD, GraderCall)
        except EOFError:
            return
        rid = request["id"]
        timeout = max(1, int(request.get("timeout", 30)))
        scenario, options = scenarios[request["scenario"]], dict(request.get("options") or {})
        substitutes = options.pop("substitutes", None)
        _start_timer(timeout)
        try:
            with substituted(substitutes, ns):
                reply = {"type": "reply", "id": rid, "ok": True, **_run(scenario, ns, request["args"], options)}
                if request.get("view_args") is not None:
                    try:
                        reply["view"] = {"ok": True, **_run(scenario, ns, request["view_args"], options)}
                    except CellTimeout:
                        raise
                    except BaseException as err:  # noqa: BLE001 - the student's code, on a view
                        reply["view"] = {"ok": False, "error": short_error(err)}
        except CellTimeout:
            reply = {"type": "reply", "id": rid, "ok": False, "error": timeout_message(timeout)}
        except MemoryError as err:
            reply = {"type": "reply", "id": rid, "ok": False, "error": out_of_memory(err)}
        except BaseException as err:  # noqa: BLE001 - report whatever the student's code raised
            reply = {"type": "reply", "id": rid, "ok": False, "error": short_error(err)}
        finally:
            _forked_child_exits()
            _stop_timer()
        send(reply)


def main(argv: list[str]) -> int:
    global REQUEST_FD, RESPONSE_FD, MAIN_PID
    MAIN_PID = os.getpid()
    job_dir, work_dir = Path(argv[0]), Path(argv[1])
    REQUEST_FD, RESPONSE_FD = int(argv[2]), int(argv[3])
    os.chdir(work_dir)
    # The student's output goes nowhere: never into the protocol, never filling the disk.
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a full file makes writes fail, not the worker die
    sys.meta_path.insert(0, _Blocked())

    # Everything the grader's side needs, imported before any student code runs.
    import numpy  # noqa: F401
    import course_lib  # noqa: F401  (the release's student-facing copy, in job_dir)
    from .scenarios import SCENARIOS
    from .substitutes import substituted

    job = json.loads((job_dir / "job.json").read_text())
    send({"type": "ready", "uid": os.getuid(), "course_lib": str(Path(course_lib.__file__).parent)})

    ns: dict = {"__name__": "__main__"}
    timer.WALL_FACTOR = max(1.0, float(job.get("wall_factor", timer.WALL_FACTOR)))
    report = run_cells(job["cells"], ns, int(job.get("cell_timeout", 60)))
    send({"type": "loaded", "cells": report})
    serve(ns, SCENARIOS, substituted)
    return 0
