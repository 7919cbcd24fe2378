"""Helpers of the grading tests: the sandbox requirement, grading a notebook, reading scores."""
from __future__ import annotations

import copy
import fcntl
import importlib
import json
import os
import time
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from course_tools.grading.suite.run import run_suite

ROOT = Path(__file__).resolve().parents[1]
FAST = dict(cell_timeout=60, call_timeout=20, load_timeout=240)
HOSTILE_LIMITS = dict(cell_timeout=5, call_timeout=5, load_timeout=20)


def bubblewrap_works() -> str | None:
    """None when bubblewrap is installed and can build a sandbox here, else why not."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    probe = subprocess.run([bwrap, "--unshare-net", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"bubblewrap cannot build a sandbox here: {probe.stderr.strip()}"


def require_sandbox():
    """Grading refuses to run without bubblewrap. In CI (COURSE_REQUIRE_BWRAP=1) its absence fails
    the tests; elsewhere they are skipped, saying why."""
    problem = bubblewrap_works()
    if problem is None:
        return
    if os.environ.get("COURSE_REQUIRE_BWRAP"):
        pytest.fail(f"COURSE_REQUIRE_BWRAP is set, but {problem}", pytrace=False)
    pytest.skip(problem, allow_module_level=True)


def source(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(str(ROOT / "source" / assignment / f"{assignment}.ipynb"), as_version=4)


def grade(assignment, nb, tmp_path, name="submission", **options) -> dict:
    path = Path(tmp_path) / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return run_suite(assignment, path, **{**FAST, **options})


def wrong_catalogue(assignment: str) -> list[dict]:
    """The realistic wrong submissions of tests/fixtures/wrong_submissions/<assignment>.py: each a
    dict with name, description, edits (of the solution notebook), breaks (the tasks it must lose),
    diagnosis (task -> the misconception the feedback must name; absent: none) and, for the same
    mistake written another way, same_mistake_as (the case it repeats); for a near miss (a mistake
    that resembles a misconception but differs from it in one output), near_miss_of (that
    misconception, which must not be named); where the score a mistake deserves is part of the
    case, scores (task -> the score it must get)."""
    if not (ROOT / "tests" / "fixtures" / "wrong_submissions" / f"{assignment}.py").exists():
        return []
    return list(importlib.import_module(f"fixtures.wrong_submissions.{assignment}").WRONG)


_GRADED: dict = {}


def _shared_gradings() -> Path | None:
    """A folder that the xdist workers of this one test run share, for the gradings of graded();
    None outside xdist. `make test` runs test_autograder and test_diagnosis on two workers at once,
    and both grade the whole catalogue: each grading done once saves about ten minutes of CPU.
    Keyed by the run's id, so no run reads another's results (older folders are removed)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return None
    root = Path(tempfile.gettempdir())
    for old in root.glob("course-graded-*"):
        if old.name != f"course-graded-{run}" and time.time() - old.stat().st_mtime > 86400:
            shutil.rmtree(old, ignore_errors=True)
    folder = root / f"course-graded-{run}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _grade_case(assignment: str, case: str | None) -> dict:
    from course_tools.build import release_notebook
    from course_tools.demo_class import apply_edits

    if case is None:
        nb = source(assignment)
    elif case == "blank":
        nb = nbformat.read(str(release_notebook(assignment)), as_version=4)
    else:
        edits = next(c for c in wrong_catalogue(assignment) if c["name"] == case)["edits"]
        nb = apply_edits(source(assignment), edits)
    with tempfile.TemporaryDirectory() as folder:
        return grade(assignment, nb, folder)


def graded(assignment: str, case: str | None = None) -> dict:
    """The result of grading the solution (case None), the blank release (case "blank") or a
    catalogue case, graded once per test run: the calibration tests (test_autograder) and the
    diagnosis tests (test_diagnosis) read the same gradings, within one process and across the
    run's xdist workers (a worker that wants a grading another is doing waits for it; the two
    files walk the catalogue in opposite orders, so they seldom wait). Read it, never change it."""
    key = (assignment, case)
    if key in _GRADED:
        return _GRADED[key]
    shared = _shared_gradings()
    if shared is None:
        _GRADED[key] = _grade_case(assignment, case)
        return _GRADED[key]
    path = shared / f"{assignment}--{case or 'solution'}.json"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            _GRADED[key] = json.loads(path.read_text(encoding="utf-8"))
        else:
            result = _grade_case(assignment, case)
            text = json.dumps(result)
            assert json.loads(text) == result, "a grading result that JSON does not carry whole"
            path.with_suffix(".part").write_text(text, encoding="utf-8")
            path.with_suffix(".part").replace(path)
            _GRADED[key] = result
    return _GRADED[key]


def scores(result) -> dict:
    assert not result.get("grading_error"), result.get("grading_error")
    return {task: (graded["score"], graded["points"]) for task, graded in result["tasks"].items()}


def inject(nb, code: str):
    """The notebook with ``code`` as its last cell (after the student's solutions, so it can replace them)."""
    nb = copy.deepcopy(nb)
    nb.cells.append(nbformat.v4.new_code_cell(code))
    return nb


def worker_processes(grader_pid: int | None = None) -> list[int]:
    """Processes still alive of the workers this process (the grader) started: they carry
    COURSE_GRADER_WORKER=<the grader's pid> in their environment."""
    marker = f"COURSE_GRADER_WORKER={grader_pid or os.getpid()}\0".encode()
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ:
            alive.append(int(entry.name))
    return alive


def another_account(name: str):
    """A real Unix account ``name`` for the length of a test module (a student or classmate who
    attacks through their own account), removed afterwards; skips where accounts cannot be made."""
    if os.geteuid() != 0 or not shutil.which("runuser") or not shutil.which("useradd"):
        pytest.skip(f"the account {name} needs root, runuser and useradd")
    from course_tools.hub import accounts

    accounts.create([name])
    try:
        yield name
    finally:
        accounts.remove([name])
