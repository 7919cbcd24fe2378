"""Where the service grades one notebook: on this machine, or on a Dask cluster.

    Here     a process forked from pool.py's warm fork server (`course serve`, which starts
             it with warm_up before the first submission), killed past route.time_limit
    OnDask   a task on a Dask cluster: an existing one (`course serve --scheduler tcp://host:8786`)
             or one the service starts (`--scheduler local` or `slurm`, sized by Dask's adaptive
             deployment with `--adapt MIN:MAX`: launch/clusters.py),
             on_dask.grade_text, as `course grade --scheduler` sends it, forked from the worker's
             warm fork server (on_dask.WarmGrader, registered when the service connects), which
             refuses a worker whose course bundle differs from this one and kills its own
             grading past route.time_limit

Both end in route.grade_one with the service's settings (there is no other way to grade), and
both give a grading error (route.grading_error), never a score, when the grading itself fails.
"""
from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from ..grading.launch.pool import grade_many, warm_up
from ..grading.route import grading_error, time_limit, unmatched
from ..grading.settings import GradingSettings

log = logging.getLogger("course.serve")
# Past the grading's own time limit: the task's trip to a Dask worker and back.
DASK_SLACK_SECONDS = 60


class Here:
    def __init__(self, settings: GradingSettings):
        self.settings = settings

    def grade(self, assignment: str, notebook: Path, settings: GradingSettings | None = None) -> dict:
        """route.grade_one's result for ``notebook`` (a grading error past the time limit), with
        ``settings`` (one student's submission: GradingSettings.for_submission) or the service's."""
        _, result = next(grade_many([(None, assignment, notebook, settings or self.settings)], 1, self.settings))
        return result

    def warm_up(self) -> None:
        warm_up()

    def close(self) -> None:
        pass


class OnDask:
    def __init__(self, scheduler: str, settings: GradingSettings, workers: int = 1, adapt=None):
        from ..grading.launch.on_dask import connected
        from ..grading.results import bundle_fingerprint

        self.settings = settings
        self._closing = contextlib.ExitStack()
        self.client = self._closing.enter_context(connected(scheduler, workers, adapt))
        self.fingerprint = bundle_fingerprint()
        cluster = getattr(self.client, "cluster", None)
        if cluster is not None:
            log.info("grading on a %s started here, its scheduler at %s, %s", type(cluster).__name__,
                     self.client.scheduler.address,
                     f"adaptive from {adapt.minimum} to {adapt.maximum} workers" if adapt else f"{workers} workers")

    def grade(self, assignment: str, notebook: Path, settings: GradingSettings | None = None) -> dict:
        from ..grading.launch.on_dask import submit
        from ..release_versions import VersionError

        try:   # with the release version it is graded against: the workers need no course folder
            future = submit(self.client, assignment, notebook, settings or self.settings, self.fingerprint)
        except VersionError as err:
            return unmatched(assignment, err)
        try:
            return future.result(timeout=time_limit(assignment, self.settings) + DASK_SLACK_SECONDS)
        except Exception as err:  # noqa: BLE001 - a worker's failure (or a lost worker) is this grading's error
            future.cancel()
            return grading_error(assignment, f"the Dask task failed ({type(err).__name__}: {str(err)[:300]})")

    def warm_up(self) -> None:
        pass   # connect registered WarmGrader: each worker started its fork server then

    def close(self) -> None:
        self._closing.close()


def dispatcher(settings: GradingSettings, scheduler: str | None = None, workers: int = 1, adapt=None):
    """Here, or OnDask when a scheduler is given (an address, or a kind of cluster to start:
    launch/clusters.py, with ``workers`` workers or adaptive with ``adapt``)."""
    return OnDask(scheduler, settings, workers, adapt) if scheduler else Here(settings)
