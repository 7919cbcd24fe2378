"""`course serve --scheduler local --adapt MIN:MAX`: a Dask cluster the service starts, sized by
Dask's own adaptive deployment (launch/clusters.py). A real `course serve` process, a real
LocalCluster; the test watches the cluster through its scheduler as any Dask client would."""
from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

import pytest

from course_tools.cli import main as course
from course_tools.course_dir import init_course
from grading_support import require_sandbox
from service_support import ASSIGNMENT, blank, drop, released_course, rows, serve, variant, wait_for

BURST = 2   # one grading per worker at the most


@pytest.mark.slow
def test_an_adaptive_cluster_holds_no_worker_when_idle_and_grows_for_a_burst(tmp_path):
    """--adapt 0:2: no worker before anything is submitted; a burst of BURST submissions brings
    workers (never more than 2), each with the warm fork server though it joined after the
    service connected; every submission is graded once; idle again, the workers go."""
    distributed = pytest.importorskip("distributed")
    require_sandbox()

    def _has_warm_grader(dask_worker) -> bool:
        """On a worker (defined here: Dask sends it by value): the plugin is there, its fork server runs."""
        import os
        from multiprocessing import forkserver

        from course_tools.grading.launch.on_dask import PLUGIN_NAME

        pid = forkserver._forkserver._forkserver_pid
        if PLUGIN_NAME not in dask_worker.plugins or pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    demo = released_course(tmp_path)
    process = serve(demo, "--scheduler", "local", "--adapt", "0:2", "--rescan", "1", wait=False)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        address = wait_for(lambda: next((m[1] for line in said for m in [re.search(r"scheduler at (tcp://\S+),", line)]
                                         if m), None), 90, "the service's cluster to start")
        with distributed.Client(address, timeout="20s") as client:
            def workers() -> int:
                return len(client.scheduler_info(n_workers=-1)["workers"])

            deadline = time.monotonic() + 5   # idle: stays at none
            while time.monotonic() < deadline:
                assert workers() == 0, "an idle course holds no worker with --adapt 0:2"
                time.sleep(0.5)

            for i in range(BURST):
                drop(demo, f"s{i}", variant(blank(ASSIGNMENT), str(i)))
            counts, warm = [], []

            def all_done():
                counts.append(workers())
                if counts[-1]:
                    warm.extend(client.run(_has_warm_grader, on_error="ignore").values())   # one closing: left out
                done = [r for r in rows(demo) if r["state"] == "done"]
                return len(done) == BURST and done

            done = wait_for(all_done, 240, f"{BURST} submissions graded", every=1.0)
            assert max(counts) == 2, counts   # up to MAX, never past it
            assert warm and all(warm), warm
            assert sorted(r["student"] for r in done) == [f"s{i}" for i in range(BURST)]
            assert all(r["outcome"] == "graded" and r["gradings"] == 1 for r in done), done
            wait_for(lambda: workers() == 0, 60, "the workers to go once the course is idle again")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)
    assert process.returncode == 0, "".join(said)[-3000:]


@pytest.mark.parametrize("adapt", ["3:1", "x", "0:0", "-1:2"])
def test_adapt_refuses_what_is_not_min_to_max(adapt, capsys):
    with pytest.raises(SystemExit) as exit_status:
        course(["serve", "--adapt", adapt])
    assert exit_status.value.code == 2
    assert "--adapt" in capsys.readouterr().err


def test_adapt_needs_a_cluster_the_service_starts(tmp_path, capsys):
    init_course(tmp_path / "course", "demo", tmp_path / "exchange", None)
    for scheduler in ([], ["--scheduler", "tcp://127.0.0.1:1"]):
        assert course(["serve", "--course", str(tmp_path / "course"), "--adapt", "0:2", *scheduler]) != 0
        assert "--adapt sizes a Dask cluster the service starts" in capsys.readouterr().err
