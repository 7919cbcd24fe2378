"""Grading many notebooks on this machine: a fresh process per notebook, without paying for imports.

Each notebook is graded in a process of its own (pytest runs a hidden suite once per process,
and a crash or a hang costs one notebook). Starting Python and importing what grading needs
(PyTorch, pytest, NumPy, nbformat, the grader) takes 2-4 s, as long as grading a notebook itself.
So the processes are forked from a *fork server* that imported all of it once (multiprocessing's
"forkserver" context, which forks from a clean single-threaded process): each child starts
warm, grades one notebook with run_suite and exits. A child that outlives its time limit is
killed, and that notebook gets a grading error, never a score. Each child runs route.grade_one
with the settings of the command that asked (settings.py), never the fork server's environment.
"""
from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import time
from pathlib import Path

from ..route import grading_error, time_limit
from ..sandbox.bwrap import sweep_stale_jobs
from ..settings import GradingSettings

PRELOAD = "course_tools.grading.launch.preload"
SERVER_TRIES = 3            # forks tried before a dead fork server is this grading's failure
SERVER_RETRY_SECONDS = 0.5  # for a killed server to be gone (then the next fork starts a new one)


def _context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([PRELOAD])
    return context


def warm_up() -> None:
    """Start the fork server now, without waiting for it: its imports (2-4 s) then overlap with
    whatever the caller does next instead of delaying the first grading (`course serve` starts
    it before any submission arrives)."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


def stop_server() -> None:
    """Stop the fork server this process started, if any (a Dask worker that closes: on_dask.py).
    Gradings already forked from it run on to their end; a later grading starts a new server."""
    import os
    import signal
    from multiprocessing import forkserver

    # multiprocessing has no public way to stop it. _stop (what its own tests use) closes the
    # server's "alive" pipe, on which the server exits, and waits for it; but a server exits on
    # that only between forks and after its imports, and then tears down PyTorch: seconds, past
    # the 4 s Dask gives a closing worker. It holds nothing to save: end it first.
    server = forkserver._forkserver
    if server._forkserver_pid is not None:
        try:
            os.kill(server._forkserver_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    server._stop()


def _child(conn, assignment: str, notebook: str, settings: dict, target=None) -> None:
    # The settings come with the job: the fork server's environment is the one it started with.
    import os

    from ..route import grade_one
    from ..settings import MACHINE_VARIABLES, GradingSettings
    from ..suite.run import cap_grader_memory

    settings = GradingSettings.from_dict(settings)
    for key in MACHINE_VARIABLES:
        os.environ.pop(key, None)
    os.environ.update(settings.machine)
    cap_grader_memory()
    result = grade_one(assignment, Path(notebook), settings, target=target)
    conn.send_bytes(json.dumps(result).encode())
    conn.close()


def _start(process) -> None:
    """Start ``process`` from the fork server, starting a new server if this one died (killed,
    out of memory). multiprocessing checks that the server is alive before each fork and starts
    a new one when it is not; but a server killed a moment before that check may still be
    alive for it, take the request and close the connection without a child (EOFError)."""
    for attempt in range(SERVER_TRIES):
        try:
            process.start()
            return
        except (EOFError, OSError):
            if attempt == SERVER_TRIES - 1:
                raise
            time.sleep(SERVER_RETRY_SECONDS)


def grade_many(jobs: list[tuple], workers: int, settings: GradingSettings):
    """Grade (tag, assignment, notebook) jobs, ``workers`` at a time; yields (tag, result) as each
    finishes. A job may carry its own settings as a fourth item (one student's submission:
    GradingSettings.for_submission) and, fifth, the target.Target to grade against, decided
    elsewhere (a Dask task's: shipped.py). A child past route.time_limit is killed: a grading
    error for its notebook."""
    context = _context()
    pending = list(jobs)
    running: dict = {}  # reader -> (tag, assignment, process, deadline, limit)
    while pending or running:
        while pending and len(running) < max(1, workers):
            tag, assignment, notebook, *own = pending.pop(0)
            reader, writer = context.Pipe(duplex=False)
            job_settings = own[0] if own else settings
            target = own[1] if len(own) > 1 else None
            process = context.Process(target=_child, daemon=True,
                                      args=(writer, assignment, str(notebook), job_settings.as_dict(), target))
            _start(process)
            writer.close()
            limit = time_limit(assignment, settings)
            running[reader] = (tag, assignment, process, time.monotonic() + limit, limit)
        soonest = min(entry[3] for entry in running.values())
        ready = multiprocessing.connection.wait(list(running), timeout=max(0.1, soonest - time.monotonic()))
        for reader in ready:
            tag, assignment, process, _, _ = running.pop(reader)
            try:
                result = json.loads(reader.recv_bytes().decode())
            except (EOFError, OSError, ValueError):
                process.join(5)
                result = grading_error(assignment, f"the grading process ended without a result "
                                                   f"(exit status {process.exitcode})")
            reader.close()
            process.join(10)
            yield tag, result
        now = time.monotonic()
        for reader in [r for r, entry in running.items() if entry[3] <= now]:
            tag, assignment, process, _, limit = running.pop(reader)
            process.kill()
            process.join(10)
            reader.close()
            sweep_stale_jobs()  # the killed grading's job folder (a classmate's code) goes now, not later
            yield tag, grading_error(assignment, f"the grading process ran for more than {limit} s, longer than "
                                                 f"the time budgets allow")
