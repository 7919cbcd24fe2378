"""`course serve --scheduler slurm --adapt 0:1`: the gradings on workers that dask-jobqueue's
SLURMCluster submits as Slurm jobs, on a real single-node Slurm of the test's own (slurm_node.py:
Debian's munged, slurmctld, slurmd). Skipped where Slurm or dask-jobqueue is not installed;
.ci/run installs both, and sets COURSE_REQUIRE_SLURM so that a node that does not start fails it."""
from __future__ import annotations

import os
import subprocess

import pytest

from grading_support import require_sandbox
from service_support import ASSIGNMENT, COURSE_SCRIPT, blank, drop, released_course, rows, variant
from slurm_node import available, slurm_node

# Dask's scheduler and workers on loopback (dask-jobqueue's own settings, as an instructor would set them).
LOOPBACK = {"DASK_JOBQUEUE__SLURM__SCHEDULER_OPTIONS": '{"host": "127.0.0.1"}',
            "DASK_JOBQUEUE__SLURM__WORKER_EXTRA_ARGS": '["--host", "127.0.0.1"]'}


@pytest.mark.slow
def test_the_service_grades_on_workers_started_as_slurm_jobs(tmp_path):
    pytest.importorskip("dask_jobqueue")
    why = available()
    if why and os.environ.get("COURSE_REQUIRE_SLURM"):
        pytest.fail(f"COURSE_REQUIRE_SLURM is set (.ci/run installed Slurm) but: {why}")
    if why:
        pytest.skip(why)
    require_sandbox()
    demo = released_course(tmp_path / "course")
    for i in range(2):
        drop(demo, f"s{i}", variant(blank(ASSIGNMENT), str(i)))
    with slurm_node(tmp_path / "slurm") as env:
        served = subprocess.run([COURSE_SCRIPT, "serve", "--course", str(demo.course_dir), "--once",
                                 "--scheduler", "slurm", "--adapt", "0:1"], env={**env, **LOOPBACK}, cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)   # the jobs' slurm-N.out: in tmp_path
        assert served.returncode == 0, (served.stdout + served.stderr)[-3000:]
        jobs = subprocess.run(["scontrol", "-o", "show", "jobs"], env=env, capture_output=True, text=True).stdout
    assert "SLURMCluster" in served.stdout + served.stderr
    graders = [line for line in jobs.splitlines() if "JobName=course-grader" in line]
    assert graders, jobs   # the workers were Slurm jobs of the service's cluster
    done = rows(demo)
    assert sorted(r["student"] for r in done) == ["s0", "s1"]
    assert all(r["state"] == "done" and r["outcome"] == "graded" and r["gradings"] == 1 for r in done), done
