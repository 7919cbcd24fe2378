"""`course check` names the mistake behind a failed check, where it can.

With the full course bundle (a self-paced learner's clone), each task whose visible check failed
is probed in the notebook's own kernel, after its cells ran: a few inputs on which the course's
known mistakes show (course_tools/grading/diagnosis/probes.py), answered by the student's code through the
grader's scenario functions, then compared with the reference and matched against the known
wrong implementations by the grader's own Diagnoser. The verdict reads "looks like": a match on
values, never a proof.

The student install has no course_tools (the misconceptions are wrong implementations, and a
wrong implementation can give the right one away), so there the diagnosis is simply absent.
Nothing here may break a check: any failure of the probing means no diagnosis.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from course_lib import tasks


def available() -> bool:
    """True where the misconceptions and the probes are installed (the full bundle)."""
    try:
        import course_tools.grading.diagnosis.probes  # noqa: F401  (the full bundle only)
    except ImportError:
        return False
    return True


def diagnose(assignment: str, failed: list[str], execute: Callable[[str], str | None]) -> dict[str, dict]:
    """{task: {"name", "title", "explanation", "where"}} for the failed tasks the probes recognise.

    execute(code) runs a code cell in the notebook's kernel and returns its error line or None.
    """
    if assignment not in tasks.ASSIGNMENTS or not failed or not available():
        return {}
    from course_tools.grading.diagnosis import probes

    try:
        chosen = probes.probes_of(assignment, failed)
        if not chosen:
            return {}
        with tempfile.TemporaryDirectory(prefix="course-check-") as folder:
            requests, answers = Path(folder) / "requests", Path(folder) / "answers"
            probes.write_requests(chosen, requests)
            if execute(probes.kernel_code(requests, answers)) is not None or not answers.exists():
                return {}
            found = probes.diagnose(assignment, chosen, probes.read_answers(answers))
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus; the check's own report stands without it
        return {}
    return {task: misconception.as_dict() for task, misconception in found.items()}
