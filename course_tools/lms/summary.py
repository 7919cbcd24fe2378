"""What `course status` and `course report` say of the LMS, from the course's database alone (no
request is made).

    recorded(course)         {assignment: {state: count}} of the scores pushes have recorded
                             ("sent": the platform holds them; "refused"; "sending": a post whose answer
                             never came), or None when no push has run; ``table`` progress: the same of
                             the grading service's progress posts (progress.py)
    overview(course)         one line per assignment pushed or with progress posted
    lines(course, ID)        for one assignment: what the platform holds and, per reason, who the next
                             `course lms push ID` would send (push.plan: the final scores against the
                             ledger), and the progress posts; nothing when neither has run
"""
from __future__ import annotations

from collections import Counter

from ..course_dir import Course

STATES = {"sent": "held by the LMS", "refused": "refused by it", "sending": "sent without an answer"}
PROGRESS_STATES = {"sent": "shown by the LMS", "refused": "refused by it",
                   "sending": "to send again (no answer yet)"}


def recorded(course: Course, table: str = "scores") -> dict[str, Counter] | None:
    """The scores (``table`` "progress": the progress posts of students no push has recorded yet)
    recorded per assignment and state; None when there are none (nothing is created by reading)."""
    from sqlalchemy import create_engine, inspect, select

    from . import ledger

    if course.db_url.startswith("sqlite:///") and not course.gradebook_exists():
        return None
    engine = create_engine(course.db_url)
    try:
        def read(chosen) -> list:
            if not inspect(engine).has_table(chosen.name):
                return []
            with engine.begin() as conn:
                return list(conn.execute(select(chosen.c.assignment, chosen.c.student, chosen.c.state)))

        pushed = read(ledger.scores)
        rows = pushed if table == "scores" else read(ledger.progress)
    finally:
        engine.dispose()
    final = {(assignment, student) for assignment, student, _ in pushed} if table == "progress" else set()
    found: dict[str, Counter] = {}
    for assignment, student, state in rows:
        if (assignment, student) not in final:   # the push's now: the LMS holds its score
            found.setdefault(assignment, Counter())[state] += 1
    return found or None


def _counts(states: Counter, names: dict = STATES) -> str:
    return ", ".join(f"{states[state]} {what}" for state, what in names.items() if states[state])


def _progress(states: Counter) -> str:
    return f"progress from the grading service: {_counts(states, PROGRESS_STATES)}"


def overview(course: Course) -> list[str]:
    """One line per assignment that has been pushed or had progress posted, for `course status`."""
    found, progress = recorded(course) or {}, recorded(course, "progress") or {}
    out = []
    for assignment in sorted({*found, *progress}):
        parts = ([_counts(found[assignment])] if assignment in found else []) + (
            [_progress(progress[assignment])] if assignment in progress else [])
        out.append(f"  {assignment}: {'; '.join(parts)}")
    return out


def lines(course: Course, assignment: str) -> list[str]:
    """What the LMS holds of ``assignment``, what the next push would send, by reason, and the
    grading service's progress posts."""
    progress = (recorded(course, "progress") or {}).get(assignment)
    found = (recorded(course) or {}).get(assignment)
    if not found:
        return [f"LMS: no score pushed yet; {_progress(progress)}."] if progress else []
    from .ledger import Ledger
    from .push import plan

    with Ledger(course.db_url) as ledger:
        outcome = plan(course, assignment, ledger)
    out = [f"LMS: {_counts(found)}."]
    if progress:
        out.append(f"  {_progress(progress)}")
    reasons: dict[str, list[str]] = {}
    for planned in outcome.planned:
        reasons.setdefault(planned.why, []).append(planned.score.student)
    if not reasons:
        out.append(f"  the next `course lms push {assignment}` sends nothing: the LMS is up to date")
    for why, students in sorted(reasons.items()):
        out.append(f"  to send at the next `course lms push {assignment}` ({why}): {', '.join(sorted(students))}")
    return out
