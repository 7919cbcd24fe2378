"""Grading job folders (sandbox.JobFolder) against a classmate with a Unix account of their own.

A job folder holds the cells the worker runs: a student's solution code. While it is graded,
a classmate's account (made as the hub makes them: course_tools/hub/accounts.py) tries to
list and read it, and must fail; whatever ends the grading (here: the grading process killed
at its time limit, through the real route of `course grade` and `course serve`, pool.py), the
folder is gone; and a new grading sweeps the folders of graders that died, and nothing else.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from grading_support import another_account, inject, require_sandbox, source

from course_tools.grading.launch.pool import grade_many
from course_tools.grading.sandbox import bwrap as sandbox
from course_tools.grading.settings import GradingSettings

require_sandbox()

ASSIGNMENT = "01_forward_ops"
CLASSMATE = "job-eve"
# The grading is killed after this long (its notebook sleeps): long enough, on a loaded machine, for the
# fork server, the imports and the sandbox to start and hold the job folder a while.
LIMIT = 40


@pytest.fixture(scope="module")
def classmate():
    yield from another_account(CLASSMATE)


def _as(account: str, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", account, "--", *command], capture_output=True, text=True, timeout=30, check=False)


def _start_of(pid: int) -> str:
    """The process's start time as proc(5) gives it: field 22 of /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[22 - 3]


def test_a_classmate_cannot_read_a_job_folder_and_a_killed_grading_leaves_none(classmate, tmp_path):
    marker = f"classmate-solution-{uuid.uuid4().hex}"
    path = tmp_path / f"{ASSIGNMENT}.ipynb"
    nbformat.write(inject(source(ASSIGNMENT), f"# {marker}\nimport time\ntime.sleep(600)\n"), str(path))
    seen: dict = {}

    def spy():
        """Find the job folder that holds the marker (as the grader may), then try as the classmate."""
        deadline = time.monotonic() + LIMIT + 30
        while time.monotonic() < deadline and "folder" not in seen:
            for folder in sandbox.jobs_folder().glob(f"{sandbox.JOB_PREFIX}*"):
                try:
                    if marker in (folder / "ro" / "job.json").read_text():
                        seen["folder"] = folder
                        break
                except OSError:
                    continue
            time.sleep(0.1)
        if "folder" in seen:
            folder = seen["folder"]
            seen["tries"] = {what: _as(classmate, *command) for what, command in {
                "list": ("ls", str(folder)), "list ro": ("ls", str(folder / "ro")),
                "read job.json": ("cat", str(folder / "ro" / "job.json")),
                "read course_lib": ("cat", str(folder / "ro" / "course_lib" / "__init__.py"))}.items()}

    thread = threading.Thread(target=spy)
    thread.start()
    [(_, result)] = list(grade_many([(None, ASSIGNMENT, path)], 1, GradingSettings.current(notebook_seconds=LIMIT)))
    thread.join()
    assert "folder" in seen, f"no job folder held the submission's code while it was graded: {result}"
    for what, done in seen["tries"].items():
        assert done.returncode != 0 and marker not in done.stdout, f"{classmate} could {what}: {done.stdout[:200]}"
        assert "Permission denied" in done.stderr, (what, done.stderr)
    assert f"more than {LIMIT} s" in (result["grading_error"] or ""), result["grading_error"]
    assert not seen["folder"].exists(), f"the killed grading left {seen['folder']}"


def test_a_new_job_folder_sweeps_those_of_dead_graders_only(classmate, tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    here = sandbox.jobs_folder()
    tag = uuid.uuid4().hex[:8]
    dead = here / f"{sandbox.JOB_PREFIX}{gone.pid}-{_start_of(os.getpid())}-{tag}"
    reused = here / f"{sandbox.JOB_PREFIX}{os.getpid()}-1-{tag}"  # this pid now, but a process that started earlier
    live = here / f"{sandbox.JOB_PREFIX}{os.getpid()}-{_start_of(os.getpid())}-{tag}"
    planted = here / f"{sandbox.JOB_PREFIX}{gone.pid}-1-{tag}planted"
    for folder in (dead, reused, live):
        folder.mkdir(mode=0o700)
        (folder / "job.json").write_text("{}")
    assert _as(classmate, "mkdir", str(planted)).returncode == 0
    job = None
    try:
        job = sandbox.JobFolder(ASSIGNMENT, [], 5, sandbox.grading_account())
        assert not dead.exists() and not reused.exists()
        assert live.exists(), "the folder of a grader that is alive was removed"
        assert planted.exists(), "a folder another account made was removed"
        assert job.path.exists()
    finally:
        if job is not None:
            job.remove()
        for folder in (dead, reused, live, planted):
            shutil.rmtree(folder, ignore_errors=True)


def test_a_job_folder_that_cannot_be_filled_is_removed(tmp_path):
    before = set(sandbox.jobs_folder().glob(f"{sandbox.JOB_PREFIX}{os.getpid()}-*"))
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.JobFolder(ASSIGNMENT, [], 5, None, course_lib=tmp_path / "no_course_lib")
    assert set(sandbox.jobs_folder().glob(f"{sandbox.JOB_PREFIX}{os.getpid()}-*")) == before
