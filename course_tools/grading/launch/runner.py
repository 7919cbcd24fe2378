"""The launcher of route.grade_one in a fresh process: ``python -m course_tools.grading.suite``.

Each grading gets a fresh interpreter (pytest runs the hidden suite once per process, and a
crash or a hang costs one notebook, never the batch). Used by nbgrader's HiddenSuiteGrader
(``grade_in_process``) for a notebook `course grade` has not graded; `course grade` itself and
the Dask workers fork from a warm server instead (pool.py, on_dask.py).

The result is the suite's, or route.grading_error(...) when the grading process itself failed:
such a result is reported and never stored as a score.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ..route import grading_error, time_limit
from ..settings import GradingSettings


def grade_in_process(assignment: str, notebook: Path, settings: GradingSettings, suite_dir: Path | None = None) -> dict:
    """Grade ``notebook`` with the hidden suite of ``assignment`` (or the one in ``suite_dir``) in a
    fresh Python process, killed past route.time_limit. Never raises."""
    limit = time_limit(assignment, settings)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as scratch:
        out = Path(scratch) / "result.json"
        command = [sys.executable, "-m", "course_tools.grading.suite", assignment, str(notebook), "--json", str(out),
                   "--settings", json.dumps(settings.as_dict())]
        if suite_dir is not None:
            command += ["--suite", str(suite_dir)]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=limit)
            if completed.returncode in (0, 3) and out.exists():
                return json.loads(out.read_text())
            problem = f"exit status {completed.returncode}: " + (completed.stderr or completed.stdout)[-600:].strip()
        except subprocess.TimeoutExpired:
            problem = f"the grading process ran for more than {limit} s, longer than the time budgets allow"
        except (OSError, ValueError) as err:
            problem = f"{type(err).__name__}: {err}"
    return grading_error(assignment, f"the grader failed on this notebook ({problem})")
