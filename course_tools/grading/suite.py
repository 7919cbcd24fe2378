"""Running a hidden suite against one submission, and scoring it per task.

A hidden test is a pytest function in autograder/<assignment>/ marked with its task id:

    @task("forward_matmul", weight=2)
    def test_batched_matmul_broadcasts_batch_axes(student, rng):
        "batched matmul with broadcast batch axes"   # the line the student sees in feedback
        a, b = rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((5, 4, 2))
        expect_close(student.forward("MatMul", {}, a, b), a @ b, "MatMul.compute((2,1,3,4), (5,4,2))")

A task scores points * (weight of its passed tests) / (weight of all its tests): a half-right
answer gets part of the points. Feedback names each check by its docstring and says why it
failed (the assertion's message), never showing the test's code.

    python -m course_tools.grading.suite 04_conv_backward path/to/notebook.ipynb [--json out.json]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course_lib import tasks
from course_lib.checks import assert_close

from ..build import release_notebook as release_notebook_of
from .sandbox import sandbox_kind
from .session import CURRENT, StudentError, StudentSession

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "autograder"


def task(task_id: str, weight: float = 1.0):
    """Mark a hidden test as one check of ``task_id``."""
    known = {t for a in tasks.ASSIGNMENTS for t in tasks.LIBRARY_TASKS[a] + tasks.NOTEBOOK_TASKS[a]}
    if task_id not in known:
        raise ValueError(f"unknown task id {task_id!r}")
    return pytest.mark.task(task_id, weight=weight)


def expect_close(got, expected, what: str, rtol: float = 1e-6, atol: float = 1e-8, dtype=None):
    """assert_close for hidden tests; with ``dtype``, the result must also have that dtype."""
    if dtype is not None and getattr(got, "dtype", None) != np.dtype(dtype):
        raise AssertionError(f"{what}: wrong dtype: got {getattr(got, 'dtype', type(got).__name__)}, expected {dtype}")
    assert_close(got, expected, what, rtol=rtol, atol=atol)


def worked_answer(student, name: str, shape: tuple) -> np.ndarray:
    """A numeric answer the notebook stored in ``name``, as a float64 array of ``shape``;
    AssertionError (the student's message) if it is missing, not numeric or misshapen."""
    try:
        value = student.variable(name)
    except StudentError as err:
        raise AssertionError(f"{name}: {err}") from None
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise AssertionError(f"{name} should be an array of numbers, got {type(value).__name__}") from None
    if array.shape != tuple(shape):
        raise AssertionError(f"{name} should have shape {tuple(shape)}, got {array.shape}")
    return array


def expect_worked(array: np.ndarray, expected, name: str, hint: str) -> None:
    """Compare a worked answer without revealing the expected numbers in the message."""
    wrong = ~np.isclose(array, expected, rtol=1e-9, atol=1e-9)
    if wrong.any():
        raise AssertionError(f"{name}: wrong values ({int(wrong.sum())} of {wrong.size} entries are not right); {hint}")


def graded_tasks(release_notebook: Path) -> dict[str, float]:
    """Autograded test cells of the release: task id -> points."""
    nb = nbformat.read(str(release_notebook), as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            out[meta["grade_id"]] = float(meta["points"])
    return out


class _Recorder:
    """A pytest plugin that records each check's task, weight, outcome and message."""

    def __init__(self):
        self.records: list[dict] = []

    def pytest_configure(self, config):
        config.addinivalue_line("markers", "task(task_id, weight=1.0): the task a hidden check grades")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if not (report.when == "call" or (report.when == "setup" and report.failed)):
            return
        marker = item.get_closest_marker("task")
        if marker is None:
            return
        description = (item.function.__doc__ or item.name).strip().splitlines()[0]
        message = ""
        if call.excinfo is not None:
            err = call.excinfo.value
            if isinstance(err, StudentError):
                message = f"your code: {err}"
            elif isinstance(err, AssertionError):
                message = str(err) or "a hidden check failed"
            else:
                message = f"the check could not run ({type(err).__name__}: {str(err)[:300]})"
        self.records.append({"task": marker.args[0], "weight": float(marker.kwargs.get("weight", 1.0)),
                             "check": description, "passed": report.passed, "message": message[:1200]})


def run_suite(assignment: str, notebook: Path, release_notebook: Path | None = None,
              course_root: Path | None = None, **session_options) -> dict:
    """Grade one notebook; returns {"tasks": {task: {"points", "score", "checks": [...]}}, ...}."""
    release_notebook = release_notebook or release_notebook_of(assignment)
    points = graded_tasks(release_notebook)
    suite = SUITES / assignment
    start = time.perf_counter()
    with StudentSession(assignment, notebook, release_notebook, course_root=course_root, **session_options) as session:
        plugin = _Recorder()
        CURRENT.append(session)
        try:
            if suite.is_dir():
                with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
                    pytest.main([str(suite), "-qq", "--tb=no", "-rN", "-p", "no:cacheprovider",
                                 "--import-mode=importlib", "-p", "no:warnings", "-o", "addopts="], plugins=[plugin])
        finally:
            CURRENT.pop()
        load_errors = session.loaded_cell_errors()
        fatal = session.fatal
        starts = session.starts
    result = {"assignment": assignment, "notebook": Path(notebook).name, "sandbox": sandbox_kind(),
              "seconds": round(time.perf_counter() - start, 2), "worker_starts": starts,
              "fatal": fatal, "cell_errors": load_errors, "tasks": {}}
    for task_id, max_points in points.items():
        checks = [r for r in plugin.records if r["task"] == task_id]
        total = sum(c["weight"] for c in checks)
        passed = sum(c["weight"] for c in checks if c["passed"])
        score = round(max_points * passed / total, 4) if total else 0.0
        if not checks:
            checks = [{"check": "hidden checks", "passed": False, "weight": 1.0,
                       "message": fatal or "no hidden checks ran for this task"}]
        result["tasks"][task_id] = {"points": max_points, "score": score, "checks": checks}
    return result


def feedback_text(task_id: str, graded: dict) -> str:
    """What the student reads under a graded cell."""
    checks = graded["checks"]
    passed = sum(1 for c in checks if c["passed"])
    lines = [f"Hidden checks for {task_id}: {passed} of {len(checks)} passed "
             f"({graded['score']:g} / {graded['points']:g} points)"]
    for check in checks:
        mark = "\N{CHECK MARK}" if check["passed"] else "\N{BALLOT X}"
        lines.append(f"  {mark} {check['check']}" + ("" if check["passed"] else f": {check['message']}"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade one notebook with its assignment's hidden suite.")
    parser.add_argument("assignment")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--release", type=Path, default=None, help="the release notebook (default: assignments/)")
    parser.add_argument("--course-root", type=Path, default=None, help="the nbgrader course folder to hide")
    parser.add_argument("--json", type=Path, default=None, help="write the result here")
    args = parser.parse_args(argv)
    result = run_suite(args.assignment, args.notebook, args.release, args.course_root)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    else:
        for task_id, graded in result["tasks"].items():
            sys.stdout.write(feedback_text(task_id, graded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
