"""Grading many notebooks on this machine: a fresh process per notebook, without paying for imports.

Each notebook is graded in a process of its own (pytest runs a hidden suite once per process,
and a crash or a hang costs one notebook). Starting Python and importing what grading needs
(PyTorch, pytest, NumPy, nbformat, the grader) takes 2-4 s, as long as grading a notebook itself.
So the processes are forked from a *fork server* that imported all of it once (multiprocessing's
"forkserver" context, which forks from a clean single-threaded process): each child starts
warm, grades one notebook with run_suite and exits. A child that outlives its time limit is
killed, and that notebook gets a grading error, never a score.
"""
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import time
from pathlib import Path

PRELOAD = "course_tools.grading.preload"
SLACK_S = 60


def _context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([PRELOAD])
    return context


def _settings() -> dict:
    """The grading settings of the environment now (the fork server's copy may be older)."""
    import os

    return {k: v for k, v in os.environ.items() if k.startswith(("COURSE_GRADER_", "COURSE_LIB_"))}


def _child(conn, assignment: str, notebook: str, settings: dict) -> None:
    import os

    from .suite import cap_grader_memory, run_suite

    for key in [k for k in os.environ if k.startswith(("COURSE_GRADER_", "COURSE_LIB_"))]:
        del os.environ[key]
    os.environ.update(settings)
    try:
        cap_grader_memory()
        result = run_suite(assignment, Path(notebook))
    except BaseException as err:  # noqa: BLE001 - the grader's own failure: a grading error
        result = {"assignment": assignment, "tasks": {},
                  "grading_error": f"the grader failed on this notebook ({type(err).__name__}: {str(err)[:300]})"}
    conn.send_bytes(json.dumps(result).encode())
    conn.close()


def grade_many(jobs: list[tuple[object, str, Path]], workers: int, timeout: int | None = None):
    """Grade (tag, assignment, notebook) jobs, ``workers`` at a time; yields (tag, result) as each finishes."""
    from .runner import time_limit

    context = _context()
    pending = list(jobs)
    running: dict = {}  # reader -> (tag, assignment, process, deadline)
    while pending or running:
        while pending and len(running) < max(1, workers):
            tag, assignment, notebook = pending.pop(0)
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(writer, assignment, str(notebook), _settings()),
                                      daemon=True)
            process.start()
            writer.close()
            limit = timeout or time_limit(assignment)
            running[reader] = (tag, assignment, process, time.monotonic() + limit + SLACK_S, limit)
        soonest = min(entry[3] for entry in running.values())
        ready = multiprocessing.connection.wait(list(running), timeout=max(0.1, soonest - time.monotonic()))
        for reader in ready:
            tag, assignment, process, _, _ = running.pop(reader)
            try:
                result = json.loads(reader.recv_bytes().decode())
            except (EOFError, OSError, ValueError):
                process.join(5)
                result = {"assignment": assignment, "tasks": {}, "grading_error":
                          f"the grading process ended without a result (exit status {process.exitcode})"}
            reader.close()
            process.join(10)
            yield tag, result
        now = time.monotonic()
        for reader in [r for r, entry in running.items() if entry[3] <= now]:
            tag, assignment, process, _, limit = running.pop(reader)
            process.kill()
            process.join(10)
            reader.close()
            yield tag, {"assignment": assignment, "tasks": {}, "grading_error":
                        f"the grading process ran for more than {limit} s, longer than the time budgets allow"}
