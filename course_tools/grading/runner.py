"""Grading one notebook in its own process: ``python -m course_tools.grading.suite``.

Each grading gets a fresh interpreter (pytest runs the hidden suite once per process, and a
crash or a hang costs one notebook, never the batch). Used by nbgrader's HiddenSuiteGrader,
by `course grade --workers N`, and on the workers of a Dask cluster (``grade_text``).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .results import bundle_fingerprint

DEFAULT_TIMEOUT_S = 900


def grade_file(assignment: str, notebook: Path, course_root: Path | None = None,
               timeout: int = DEFAULT_TIMEOUT_S) -> dict:
    """Run the hidden suite of ``assignment`` on the notebook at ``notebook``. Never raises for
    the submission's sake: a grading that fails comes back as {"tasks": {}, "fatal": why}."""
    with tempfile.TemporaryDirectory(prefix="course-grade-") as scratch:
        out = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "course_tools.grading.suite", assignment, str(notebook), "--json", str(out)]
        if course_root is not None:
            command += ["--course-root", str(course_root)]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
            if completed.returncode == 0 and out.exists():
                return json.loads(out.read_text())
            problem = (completed.stderr or completed.stdout)[-800:]
        except subprocess.TimeoutExpired:
            problem = f"grading took longer than {timeout} s"
    return {"assignment": assignment, "tasks": {},
            "fatal": f"the grader could not grade this notebook ({problem.strip()[-300:]})"}


def grade_text(assignment: str, notebook_name: str, text: str, expected_fingerprint: str,
               timeout: int = DEFAULT_TIMEOUT_S) -> dict:
    """A Dask task: grade a notebook sent as text, on a machine that has the bundle installed.
    Refuses (raises) when that machine's grading bundle differs from the grader's, since its
    scores would not be the ones the instructor's hidden suites give."""
    mine = bundle_fingerprint()
    if mine != expected_fingerprint:
        raise RuntimeError(f"this worker's course bundle (fingerprint {mine}) differs from the grader's "
                           f"({expected_fingerprint}): install the same commit of the course on every worker")
    with tempfile.TemporaryDirectory(prefix="course-remote-") as scratch:
        path = Path(scratch) / notebook_name
        path.write_text(text)
        result = grade_file(assignment, path, None, timeout)
    result["fingerprint"] = mine
    return result
