"""Grading on a Dask cluster, each worker with the warm fork server `course grade` uses locally.

    connect(scheduler)   a client of the cluster, with WarmGrader registered on its workers
                         (and on every worker that joins later: Dask's worker plugins)
    WarmGrader           the worker plugin: starts pool.py's fork server when the worker starts
                         (preloading preload.py, as locally), stops it when the worker closes
    grade_text           the task: a notebook sent as text, graded in a process forked from that
                         server (pool.grade_many, killed past route.time_limit); its result, a
                         JSON value, goes back

So a task costs what a grading in the local pool costs, plus the trip of the notebook's text and
the result. A fork server that died (killed, out of memory) is started again by the next grading
on that worker: multiprocessing checks that its fork server is alive before each fork
(ForkServer.ensure_running) and starts a new one when it is not.

Each worker needs the same commit of the course installed, not the course folder: grade_text
refuses (raises) on a worker whose bundle fingerprint (results.bundle_fingerprint) differs from
the grader's, since its scores would not be the ones the instructor's hidden suites give.
"""
from __future__ import annotations

import multiprocessing
import sys
import tempfile
from pathlib import Path

from ..results import bundle_fingerprint
from ..settings import GradingSettings
from .pool import grade_many, stop_server, warm_up

PLUGIN_NAME = "course-warm-grader"


def connect(scheduler: str):
    """A Dask client of the cluster at ``scheduler``, its workers each with a warm fork server
    (WarmGrader); RuntimeError (saying why) without Dask or when the scheduler cannot be reached."""
    try:
        from distributed import Client
    except ImportError as err:
        raise RuntimeError("grading on a Dask cluster needs `distributed`: pip install -e '.[dask]'") from err
    try:
        client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError) as err:
        raise RuntimeError(f"cannot reach the Dask scheduler at {scheduler} ({err}): is it running?") from err
    client.register_plugin(WarmGrader(), name=PLUGIN_NAME)
    return client


def _plugin_base():
    try:
        from distributed import WorkerPlugin
    except ImportError:   # without Dask nothing registers the plugin; the module still imports
        return object
    return WorkerPlugin


class WarmGrader(_plugin_base()):
    """Dask's worker plugin that keeps pool.py's fork server on each worker."""

    # A second client (another `course grade`, a second service) finds it registered and leaves
    # it: replacing it would stop and restart every worker's fork server.
    idempotent = True

    def setup(self, worker) -> None:
        # Dask starts its workers as daemonic processes, and multiprocessing refuses to start a
        # child (the fork server, a grading) from one. The flag only tells multiprocessing to
        # kill this process's children when its parent exits; the fork server exits by itself
        # when this worker does (its "alive" pipe closes), and each grading has its time limit.
        multiprocessing.current_process().daemon = False
        _forget_main_script()
        warm_up()

    def teardown(self, worker) -> None:
        stop_server()


def _forget_main_script() -> None:
    """Keep each grading forked on this worker from importing the worker's __main__ script again.

    multiprocessing prepares every process it starts by importing its parent's __main__ (a target
    might be defined there). A Dask worker's __main__ is whatever started it: the `dask worker`
    command (about 0.3 s of imports) or the script that made a LocalCluster (1.5 s for
    bench_service.py), paid again by every grading, whose target (pool._child) never needs it.
    Without a module name or a file to import from, multiprocessing skips that step. Only for a
    worker whose __main__ is itself that copy of its parent's (named __mp_main__); a worker
    running in the process that made the cluster keeps its real __main__."""
    main = sys.modules.get("__main__")
    if main is not None and main.__name__ == "__mp_main__":
        main.__spec__ = None
        if hasattr(main, "__file__"):
            del main.__file__


def grade_text(assignment: str, notebook_name: str, text: str, expected_fingerprint: str, settings: dict) -> dict:
    """The Dask task: grade a notebook sent as ``text`` with the grader's ``settings`` (a dict:
    GradingSettings.as_dict) in a process forked from this worker's fork server; the result, or a
    route.grading_error past route.time_limit. Raises when this worker's bundle is not the
    grader's (``expected_fingerprint``)."""
    mine = bundle_fingerprint()
    if mine != expected_fingerprint:
        raise RuntimeError(f"this worker's course bundle (fingerprint {mine}) differs from the grader's "
                           f"({expected_fingerprint}): install the same commit of the course on every worker")
    settings = GradingSettings.from_dict(settings)
    with tempfile.TemporaryDirectory(prefix="course-remote-") as scratch:
        path = Path(scratch) / Path(notebook_name).name
        path.write_text(text)
        [(_, result)] = grade_many([(None, assignment, path, settings)], 1, settings)
    result["fingerprint"] = mine
    return result
