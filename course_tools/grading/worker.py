"""The sandboxed worker: runs a submission's code cells, then answers scenario requests.

    python -m course_tools.grading.worker JOBDIR REQUEST_FD RESPONSE_FD

JOBDIR holds cells.json (the code to run), the student-facing course_lib, and in/ and out/
for arrays. Requests and responses are JSON lines on two pipes; the student's prints go to
JOBDIR/stdout.txt and stderr.txt, never into the protocol.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path


class CellTimeout(BaseException):
    """Raised by the alarm; a BaseException so that `except Exception` in student code does not swallow it."""


def _alarm(signum, frame):
    raise CellTimeout()


class _Blocked:
    """A meta-path finder that refuses some top-level packages."""

    def __init__(self, names):
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (not available while grading)", name=name)
        return None


def _short_traceback(err: BaseException, limit: int = 1500) -> str:
    lines = traceback.format_exception_only(type(err), err)
    text = "".join(lines).strip()
    return text[:limit]


def _strip_magics(source: str) -> str:
    # IPython syntax (%matplotlib, !pip) is not Python; the worker runs plain Python.
    out = []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            out.append(line[: len(line) - len(stripped)] + "pass")
        else:
            out.append(line)
    return "\n".join(out)


MAIN_PID = os.getpid()


def _forked_child_exits():
    # Student code may fork; a child must never go on as a second worker on the same pipes.
    if os.getpid() != MAIN_PID:
        os._exit(0)


def run_cells(cells: list[dict], ns: dict, cell_timeout: int) -> list[dict]:
    report = []
    for index, cell in enumerate(cells):
        name = cell.get("grade_id") or f"cell {index + 1}"
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(cell_timeout)
        try:
            code = compile(_strip_magics(cell["source"]), f"<{name}>", "exec")
            exec(code, ns)  # noqa: S102 - this is the student's code, inside the sandbox
            report.append({"cell": name, "ok": True})
        except CellTimeout:
            report.append({"cell": name, "ok": False, "error": f"took longer than {cell_timeout} s and was stopped"})
        except BaseException as err:  # noqa: BLE001 - SystemExit and friends are the student's too
            report.append({"cell": name, "ok": False, "error": _short_traceback(err)})
        finally:
            _forked_child_exits()
            signal.alarm(0)
    return report


def main(argv: list[str]) -> int:
    global MAIN_PID
    MAIN_PID = os.getpid()
    jobdir, request_fd, response_fd = Path(argv[0]), int(argv[1]), int(argv[2])
    os.chdir(jobdir)
    requests = os.fdopen(request_fd, "r", buffering=1)
    responses = os.fdopen(response_fd, "w", buffering=1)
    # The student's output goes to files, not to the protocol pipes.
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        target = os.open(jobdir / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a full file makes writes fail, not the worker die

    from course_tools.grading import values
    from course_tools.grading.scenarios import SCENARIOS

    # Students have no PyTorch; a submission must not borrow its conv either. (bubblewrap also
    # hides the files; this makes `import torch` fail cleanly, as on a student's machine.)
    sys.meta_path.insert(0, _Blocked(("torch", "functorch", "torchvision")))

    job = json.loads((jobdir / "job.json").read_text())
    ns: dict = {"__name__": "__main__"}
    report = run_cells(job["cells"], ns, job.get("cell_timeout", 60))
    responses.write(json.dumps({"type": "loaded", "cells": report}) + "\n")

    out_dir = jobdir / "out"
    for line in requests:
        request = json.loads(line)
        rid = int(request["id"])
        signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(request.get("timeout", 30)))
        try:
            scenario = SCENARIOS[request["scenario"]]
            args = values.decode(request["args"], jobdir / "in")
            result = scenario(ns, *args)
            encoded = values.Encoder(out_dir, f"r{rid}_").encode(result, "the result")
            reply = {"id": rid, "ok": True, "value": encoded}
        except CellTimeout:
            reply = {"id": rid, "ok": False, "error": f"took longer than {request.get('timeout', 30)} s and was stopped"}
        except BaseException as err:  # noqa: BLE001 - report whatever the student's code raised
            reply = {"id": rid, "ok": False, "error": _short_traceback(err)}
        finally:
            _forked_child_exits()
            signal.alarm(0)
        responses.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
