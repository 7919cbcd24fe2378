"""Grading on a Dask cluster, each worker with the warm fork server `course grade` uses locally.

    connect(scheduler)   a client of the cluster, with WarmGrader registered on its workers
                         (and on every worker that joins later: Dask's worker plugins)
    connected(...)       the same, of a cluster given by address or started here (clusters.py:
                         "local", "slurm", adaptive between MIN and MAX workers)
    WarmGrader           the worker plugin: starts pool.py's fork server when the worker starts
                         (preloading preload.py, as locally), stops it when the worker closes
    submit(client, ...)  sends one notebook: grade_text with the release version the grader
                         decided it is graded against, as data (shipped.py)
    grade_text           the task: a notebook sent as text, graded in a process forked from that
                         server (pool.grade_many, killed past route.time_limit) against the
                         version it carries; its result, a JSON value, goes back

So a task costs what a grading in the local pool costs, plus the trip of the notebook's text and
the result. A fork server that died (killed, out of memory) is started again by the next grading
on that worker: multiprocessing checks that its fork server is alive before each fork
(ForkServer.ensure_running) and starts a new one when it is not.

Each worker needs the same commit of the course installed, not the course folder: grade_text
refuses (raises) on a worker whose bundle fingerprint (results.bundle_fingerprint) differs from
the grader's, since its scores would not be the ones the instructor's hidden suites give, and
on a release version that arrived other than the grader recorded it (shipped.ShippedVersionError).
"""
from __future__ import annotations

import contextlib
import multiprocessing
import sys
import tempfile
from pathlib import Path

from ..results import bundle_fingerprint
from ..settings import GradingSettings
from . import clusters
from .pool import grade_many, stop_server, warm_up
from .shipped import carried, unpacked

PLUGIN_NAME = "course-warm-grader"


def connect(scheduler):
    """A Dask client of the cluster at ``scheduler`` (an address, or a cluster object this process
    started), its workers each with a warm fork server (WarmGrader); RuntimeError (saying why)
    without Dask or when the scheduler cannot be reached."""
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


@contextlib.contextmanager
def connected(scheduler: str, workers: int = 1, adapt: clusters.Adapt | None = None):
    """A client (connect) of the cluster at the address ``scheduler``, or of one started here
    when ``scheduler`` is a kind of clusters.py ("local", "slurm": ``workers`` workers, or
    adaptive with ``adapt``), closed at the end with the cluster it started."""
    if scheduler not in clusters.KINDS:
        if adapt is not None:
            raise RuntimeError(f"--adapt sizes a cluster this command starts (--scheduler {' or '.join(clusters.KINDS)}); "
                               f"the one at {scheduler} is sized by whoever deployed it")
        with connect(scheduler) as client:
            yield client
        return
    cluster = clusters.start(scheduler, workers, adapt)
    try:
        with connect(cluster) as client:
            yield client
    finally:
        cluster.close()


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


def submit(client, assignment: str, notebook: Path, settings: GradingSettings, fingerprint: str, **options):
    """The future of grade_text grading ``notebook`` on ``client``'s cluster with ``settings`` (one
    student's: GradingSettings.for_submission), carrying the release version this process (which
    sees the course folder) decided it is graded against (shipped.carried). ``options``: Dask's
    (key, workers). Raises release_versions.VersionError when the notebook matches no version:
    route.unmatched is then its result, as it would be on this machine."""
    shipped = carried(assignment, notebook, settings)
    return client.submit(grade_text, assignment, notebook.name, notebook.read_text(), fingerprint,
                         settings.as_dict(), shipped, pure=False, **options)


def grade_text(assignment: str, notebook_name: str, text: str, expected_fingerprint: str, settings: dict,
               shipped: dict | None = None) -> dict:
    """The Dask task: grade a notebook sent as ``text`` with the grader's ``settings`` (a dict:
    GradingSettings.as_dict) in a process forked from this worker's fork server, against the
    release version ``shipped`` (shipped.carried; None: the worker finds the version itself, in
    the course folder named by the settings, which it must then see); the result, or a
    route.grading_error past route.time_limit. Raises when this worker's bundle is not the
    grader's (``expected_fingerprint``), or the version shipped is not the one recorded."""
    mine = bundle_fingerprint()
    if mine != expected_fingerprint:
        raise RuntimeError(f"this worker's course bundle (fingerprint {mine}) differs from the grader's "
                           f"({expected_fingerprint}): install the same commit of the course on every worker")
    settings = GradingSettings.from_dict(settings)
    with tempfile.TemporaryDirectory(prefix="course-remote-") as scratch:
        job = [None, assignment, Path(scratch) / Path(notebook_name).name, settings]
        if shipped is not None:
            (Path(scratch) / "release").mkdir()
            job.append(unpacked(shipped, Path(scratch) / "release"))
        job[2].write_text(text)
        [(_, result)] = grade_many([tuple(job)], 1, settings)
    result["fingerprint"] = mine
    return result
