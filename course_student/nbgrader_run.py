"""Run one nbgrader step as a subprocess and turn its failure into a message worth reading."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .env import tool_env
from .errors import CourseError


def error_lines(log: str, keep: int = 15) -> list[str]:
    """The lines of an nbgrader log that say what went wrong (its last lines if none does)."""
    lines = [line.strip() for line in log.splitlines() if "ERROR" in line or "CRITICAL" in line or "Error" in line]
    return (lines or log.splitlines())[-keep:]


def run_nbgrader(args: list[str], cwd: Path, what: str, hint: str = "", timeout: int = 3600) -> str:
    """``nbgrader <args>`` in ``cwd``; its log, or CourseError naming ``what`` and nbgrader's errors."""
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=tool_env(),
                            capture_output=True, text=True, timeout=timeout)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        raise CourseError(f"{what} failed:\n" + "\n".join(error_lines(log)) + hint)
    return log
