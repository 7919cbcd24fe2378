"""The Dask clusters a command starts itself, and their adaptive size.

    --scheduler tcp://host:8786   an existing cluster: connected to; its own deployment sizes it
    --scheduler local             a LocalCluster on this machine (worker processes of one thread)
    --scheduler slurm             dask-jobqueue's SLURMCluster: each worker a Slurm job of one core
                                  (settings: dask-jobqueue's own, ~/.config/dask/jobqueue.yaml or
                                  DASK_JOBQUEUE__SLURM__QUEUE=... and the like)

    parse_adapt("0:4") -> Adapt(0, 4)     ValueError saying what is wrong
    start(kind, workers, adapt) -> cluster

Without ``adapt`` a started cluster has ``workers`` workers. With it, Dask's own adaptive
deployment (``cluster.adapt(minimum=, maximum=)``) sizes it by the scheduler's queue: an idle
course holds ``minimum`` workers (0: none), a burst gets up to ``maximum``. The scheduler is
told that a task it has not timed yet takes GRADING_SECONDS (Dask assumes 0.5 s, which would ask
for one worker however many gradings wait), so a burst asks for a worker per waiting grading
from the first. Workers that join later get the warm fork server like the first ones: the
plugin (on_dask.WarmGrader) is registered with the scheduler, which hands it to every worker.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("local", "slurm")
GRADING_SECONDS = "15s"   # a typical grading (benchmarks/README.md: 4-15 s of CPU per notebook)
# A Slurm job per worker: one core, one process, one thread (a grading is one process of one
# core); memory for PyTorch, the grader and the sandboxed worker (sandbox/limits.py: 2 GiB).
SLURM_WORKER = {"cores": 1, "processes": 1, "memory": "4GiB", "walltime": "04:00:00"}


@dataclass(frozen=True)
class Adapt:
    minimum: int
    maximum: int


def parse_adapt(text: str) -> Adapt:
    """``MIN:MAX`` (whole numbers, 0 <= MIN <= MAX, MAX >= 1) as an Adapt; ValueError otherwise."""
    found = re.fullmatch(r"\s*(\d{1,6})\s*:\s*(\d{1,6})\s*", text or "")
    if not found:
        raise ValueError(f"--adapt takes MIN:MAX, the fewest and the most Dask workers (e.g. 0:4), not {text!r}")
    adapt = Adapt(int(found[1]), int(found[2]))
    if adapt.maximum < 1 or adapt.minimum > adapt.maximum:
        raise ValueError(f"--adapt {text}: MIN must be at most MAX, and MAX at least 1 "
                         f"(an idle course holds MIN workers, a burst gets up to MAX)")
    return adapt


def start(kind: str, workers: int = 1, adapt: Adapt | None = None):
    """A cluster of ``kind`` (KINDS) started by this process, adaptive when ``adapt`` is given;
    RuntimeError saying what is missing when it cannot start."""
    import dask

    with dask.config.set({"distributed.scheduler.unknown-task-duration": GRADING_SECONDS}):
        if kind == "local":
            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=0 if adapt else max(1, workers), threads_per_worker=1, processes=True,
                                   dashboard_address=None, host="127.0.0.1")
        elif kind == "slurm":
            cluster = _slurm_cluster()
            if not adapt:
                cluster.scale(max(1, workers))
        else:
            raise ValueError(f"no cluster of kind {kind!r}: --scheduler takes an address or one of {', '.join(KINDS)}")
    if adapt:
        cluster.adapt(minimum=adapt.minimum, maximum=adapt.maximum)
    return cluster


def _slurm_cluster():
    import shutil

    try:
        from dask_jobqueue import SLURMCluster
    except ImportError as err:
        raise RuntimeError("--scheduler slurm needs dask-jobqueue: pip install -e '.[slurm]'") from err
    if shutil.which("sbatch") is None:
        raise RuntimeError("--scheduler slurm submits workers with sbatch, which is not on this machine's PATH")
    import sys

    # Each worker runs this interpreter (the same install of the course on every node: the bundle
    # is checked by fingerprint), and its own first line says so.
    return SLURMCluster(python=sys.executable, job_name="course-grader", **SLURM_WORKER)
