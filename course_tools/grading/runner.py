"""Grading one notebook in its own process: ``python -m course_tools.grading.suite``.

Each grading gets a fresh interpreter (pytest runs the hidden suite once per process, and a
crash or a hang costs one notebook, never the batch). Used by nbgrader's HiddenSuiteGrader,
by `course grade --workers N`, and on the workers of a Dask cluster (``grade_text``).

The result is the suite's, or {"tasks": {}, "grading_error": why} when the grading process
itself failed: such a result is reported and never stored as a score.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .results import bundle_fingerprint

LOAD_TIMEOUT_S = 240
SLACK_S = 120


def time_limit(assignment: str) -> int:
    """The longest one notebook's grading can legitimately take: running its cells, then every
    task's time budget (session.py), plus slack. Past it, the grader itself is stuck. The budgets
    count CPU time, and on the wall clock may last up to the wall factor times longer (sandbox.Limits)."""
    from ..build import release_notebook
    from .sandbox import Limits
    from .session import DEFAULT_TASK_SECONDS
    from .suite import graded_tasks

    budgets = LOAD_TIMEOUT_S + len(graded_tasks(release_notebook(assignment))) * DEFAULT_TASK_SECONDS
    return int(budgets * Limits().wall_factor + SLACK_S)


def grade_file(assignment: str, notebook: Path, timeout: int | None = None, suite_dir: Path | None = None) -> dict:
    """Run the hidden suite of ``assignment`` (or the one in ``suite_dir``) on the notebook at
    ``notebook``. Never raises: the student's failures are in the scores, the grader's in
    ``grading_error``."""
    timeout = timeout or time_limit(assignment)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as scratch:
        out = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "course_tools.grading.suite", assignment, str(notebook), "--json", str(out)]
        if suite_dir is not None:
            command += ["--suite", str(suite_dir)]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
            if completed.returncode in (0, 3) and out.exists():
                return json.loads(out.read_text())
            problem = f"exit status {completed.returncode}: " + (completed.stderr or completed.stdout)[-600:].strip()
        except subprocess.TimeoutExpired:
            problem = f"the grading process ran for more than {timeout} s, longer than the time budgets allow"
        except (OSError, ValueError) as err:
            problem = f"{type(err).__name__}: {err}"
    return {"assignment": assignment, "tasks": {}, "grading_error": f"the grader failed on this notebook ({problem})"}


def grade_text(assignment: str, notebook_name: str, text: str, expected_fingerprint: str,
               timeout: int | None = None) -> dict:
    """A Dask task: grade a notebook sent as text, on a machine that has the bundle installed.
    Refuses (raises) when that machine's grading bundle differs from the grader's, since its
    scores would not be the ones the instructor's hidden suites give."""
    mine = bundle_fingerprint()
    if mine != expected_fingerprint:
        raise RuntimeError(f"this worker's course bundle (fingerprint {mine}) differs from the grader's "
                           f"({expected_fingerprint}): install the same commit of the course on every worker")
    with tempfile.TemporaryDirectory(prefix="course-remote-") as scratch:
        path = Path(scratch) / Path(notebook_name).name
        path.write_text(text)
        result = grade_file(assignment, path, timeout)
    result["fingerprint"] = mine
    return result
