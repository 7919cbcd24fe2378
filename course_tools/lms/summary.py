"""What `course status` says of the LMS, from the course's database alone (no request is made).

    recorded(course)         {assignment: {state: count}} of the scores pushes have recorded
                             ("sent": the platform holds them; "refused"; "sending": a post whose answer
                             never came), or None when no push has run
    lines(course, ID)        for one assignment: what the platform holds and, per reason, who the next
                             `course lms push ID` would send (push.plan: the final scores against the
                             ledger), or nothing when no push of it has run
"""
from __future__ import annotations

from collections import Counter

from ..course_dir import Course

STATES = {"sent": "held by the LMS", "refused": "refused by it", "sending": "sent without an answer"}


def recorded(course: Course) -> dict[str, Counter] | None:
    """The scores recorded per assignment and state; None when the course has no push on record
    (nothing is created by reading)."""
    from sqlalchemy import create_engine, inspect, select

    from .ledger import scores

    if course.db_url.startswith("sqlite:///") and not course.gradebook_exists():
        return None
    engine = create_engine(course.db_url)
    try:
        if not inspect(engine).has_table(scores.name):
            return None
        with engine.begin() as conn:
            rows = list(conn.execute(select(scores.c.assignment, scores.c.state)))
    finally:
        engine.dispose()
    found: dict[str, Counter] = {}
    for assignment, state in rows:
        found.setdefault(assignment, Counter())[state] += 1
    return found or None


def _counts(states: Counter) -> str:
    return ", ".join(f"{states[state]} {what}" for state, what in STATES.items() if states[state])


def overview(course: Course) -> list[str]:
    """One line per assignment that has been pushed, for `course status`."""
    found = recorded(course) or {}
    return [f"  {assignment}: {_counts(states)}" for assignment, states in sorted(found.items())]


def lines(course: Course, assignment: str) -> list[str]:
    """What the LMS holds of ``assignment`` and what the next push would send, by reason."""
    found = (recorded(course) or {}).get(assignment)
    if not found:
        return []
    from .ledger import Ledger
    from .push import plan

    with Ledger(course.db_url) as ledger:
        outcome = plan(course, assignment, ledger)
    out = [f"LMS: {_counts(found)}."]
    reasons: dict[str, list[str]] = {}
    for planned in outcome.planned:
        reasons.setdefault(planned.why, []).append(planned.score.student)
    if not reasons:
        out.append(f"  the next `course lms push {assignment}` sends nothing: the LMS is up to date")
    for why, students in sorted(reasons.items()):
        out.append(f"  to send at the next `course lms push {assignment}` ({why}): {', '.join(sorted(students))}")
    return out
