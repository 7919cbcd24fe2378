"""Dask clusters for the tests, real ones on loopback.

    cluster_without(hidden)   a LocalCluster (its scheduler and worker processes) started in a
                              mount namespace of its own in which the folder ``hidden`` is an
                              empty tmpfs: workers on this machine that cannot see a course folder
                              under it, as workers on another machine cannot. Needs root and
                              `unshare` (util-linux); skips saying why otherwise.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs in the namespace: the cluster, its address on stdout, until stdin closes.
_CLUSTER = """
import sys
import distributed
with distributed.LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=True,
                              dashboard_address=None, host="127.0.0.1") as cluster:
    print(cluster.scheduler_address, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def cluster_without(hidden: Path, workers: int = 2):
    """The scheduler address of a LocalCluster of ``workers`` single-threaded worker processes
    that see an empty tmpfs where ``hidden`` is (module docstring)."""
    pytest.importorskip("distributed")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a cluster that cannot see a folder needs root and unshare (a mount namespace)")
    hidden.mkdir(parents=True, exist_ok=True)
    # The tree's own code (not the venv's editable install of another checkout), from elsewhere.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               'mount -t tmpfs -o size=1m,mode=0700 course-hidden "$1" && exec "$2" -c "$3" "$4"',
               "sh", str(hidden), sys.executable, _CLUSTER, str(workers)]
    log = tempfile.TemporaryFile(mode="w+")   # Dask's log: a pipe nobody reads would fill and stop it
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                               text=True, cwd="/", env=env, start_new_session=True)
    try:
        address = process.stdout.readline().strip()
        if not address.startswith("tcp://"):
            process.kill()
            log.seek(0)
            pytest.fail(f"the cluster in its own mount namespace did not start: {log.read()[-2000:]}")
        yield address
    except BaseException:
        log.seek(0)
        print("the cluster's log (its end):\n" + log.read()[-4000:], file=sys.stderr)   # shown by pytest
        raise
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        log.close()
