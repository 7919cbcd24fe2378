"""A student's deadlines: the due date, their own extension (extensions.py), and when late work
stops earning points under the late policy of the course folder's nbgrader_config.py.

``deadline_of`` is the one answer to "what is this student's deadline for this assignment, and how
many extra graded attempts a day": `course release` (does releasing the next assignment reveal a
solution still worth points to someone?), `course feedback` and formgrader's Release Feedback
(would a classmate's feedback reach a student who can still submit?), the grading service (its late window and attempts per
day), `course grade` (the late penalty, through nbgrader's per-submission extension) and `course
status` ask it. They sit above this module, which imports none of them.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .course_dir import Course

if TYPE_CHECKING:
    from .extensions import Grant

_GRADEBOOK = object()   # deadline_of's default: read the due date from the gradebook


def late_window_end(course: Course, due: datetime.datetime | None) -> datetime.datetime | None:
    """The last moment late work on an assignment due at ``due`` can earn points under this course's
    late policy; None when there is no such moment (no due date, or a policy that never zeroes)."""
    if due is None:
        return None
    plugin = str(course._setting("AssignLatePenalties", "plugin_class", ""))
    if plugin.endswith("PercentPerDay"):
        from .late_penalty import PercentPerDay, late_window_end as policy_end

        defaults = PercentPerDay()
        return policy_end(due, float(course._setting("PercentPerDay", "percent_per_day", defaults.percent_per_day)),
                          float(course._setting("PercentPerDay", "max_percent", defaults.max_percent)))
    if course._setting("LateSubmissionPlugin", "penalty_method", "none") == "zero":
        return due  # any lateness scores zero
    return None     # nbgrader's default: late work keeps its points


@dataclass(frozen=True)
class StudentDeadline:
    due: datetime.datetime | None              # this student's deadline (naive UTC); None: no due date
    extended: bool                             # an extension is in force (due is its deadline)
    extra_attempts: int                        # graded attempts a day on top of the service's policy
    late_window_end: datetime.datetime | None  # late work earns points until then; None: never stops
    original_due: datetime.datetime | None     # the assignment's due date in the gradebook

    @property
    def differs(self) -> bool:
        return self.extended and self.due != self.original_due


def deadline_of(course: Course, assignment: str, student: str, due=_GRADEBOOK,
                grant: Grant | None | object = _GRADEBOOK) -> StudentDeadline:
    """``student``'s deadline for ``assignment``: the assignment's due date in the gradebook (or
    ``due``, when the caller has read it), moved by the extension in force (or ``grant``, when the
    caller has read the grants), with the late policy's window counted from the student's own
    deadline."""
    if due is _GRADEBOOK:
        due = _due_in_gradebook(course, assignment)
    if grant is _GRADEBOOK:
        from .extensions import grant_in_force  # sqlalchemy: not before a command runs (test_cli_startup)

        grant = grant_in_force(course, assignment, student)
    own = grant.until if grant is not None else due
    return StudentDeadline(due=own, extended=grant is not None,
                           extra_attempts=grant.extra_attempts if grant is not None else 0,
                           late_window_end=late_window_end(course, own), original_due=due)


def deadlines_of(course: Course, assignment: str, due=_GRADEBOOK) -> dict[str, StudentDeadline]:
    """deadline_of for every student with an extension in force on ``assignment`` (the others have
    the assignment's own deadline), by student."""
    if due is _GRADEBOOK:
        due = _due_in_gradebook(course, assignment)
    from .extensions import Extensions

    store = Extensions.of(course)
    if store is None:
        return {}
    try:
        grants = store.in_force(assignment)
    finally:
        store.close()
    return {g.student: deadline_of(course, assignment, g.student, due=due, grant=g) for g in grants}


def still_open(course: Course, assignment: str, due=_GRADEBOOK,
               now: datetime.datetime | None = None) -> dict[str, StudentDeadline]:
    """The students with an extension on ``assignment`` who can still earn points on it at ``now``:
    until the end of their own late window or, under a late policy that never stops late work
    earning points, until their own deadline (after it they are late like anyone else)."""
    now = now or _utcnow()
    found = {}
    for student, mine in deadlines_of(course, assignment, due).items():
        end = mine.late_window_end or mine.due
        if end is not None and end > now:
            found[student] = mine
    return found


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _due_in_gradebook(course: Course, assignment: str) -> datetime.datetime | None:
    from nbgrader.api import MissingEntry

    if not course.gradebook_exists():
        return None
    try:
        with course.gradebook() as gradebook:
            return gradebook.find_assignment(assignment).duedate
    except MissingEntry:
        return None


def apply_to_gradebook(course: Course, assignment: str, students: list[str]) -> None:
    """Put each student's own deadline into the gradebook as nbgrader's per-submission extension
    (the difference to the assignment's due date; none without an extension), so that nbgrader's
    late penalty (autograde's LateSubmissionPlugin, formgrader, export) counts lateness from it.
    A revoked extension is removed here, at the next `course grade`."""
    from nbgrader.api import MissingEntry

    due = _due_in_gradebook(course, assignment)
    own = deadlines_of(course, assignment, due)
    with course.gradebook() as gradebook:
        for student in students:
            mine = own.get(student)
            extension = mine.due - due if mine is not None and due is not None and mine.due is not None else None
            if extension is None:
                # No extension: only an earlier one (revoked since) is cleared. A student nbgrader
                # has not met yet gets no row here: autograde adds them, as it always has.
                try:
                    submission = gradebook.find_submission(assignment, student)
                except MissingEntry:
                    continue
            else:
                gradebook.update_or_create_student(student)
                submission = gradebook.update_or_create_submission(assignment, student)
            if submission.extension != extension:
                submission.extension = extension
                gradebook.db.commit()


# Releasing assignment k hands its students the reference code of every earlier assignment (so
# one wrong answer never cascades): while an earlier assignment still accepts late work that
# earns points from anyone (an extended student included), that release reveals its solution.
def open_late_windows(course: Course, assignment: str, now: datetime.datetime | None = None) -> list[str]:
    """One line per assignment before ``assignment`` (in the course's order) that is in the gradebook
    and still accepts late work that earns points, and one per extended student who can still earn
    points on it: releasing ``assignment`` would reveal its solution."""
    from course_lib.tasks import ASSIGNMENTS

    order = list(ASSIGNMENTS)
    earlier = order[:order.index(assignment)]
    now = now or _utcnow()
    if not course.gradebook_exists():  # nothing was released yet (and nbgrader's Gradebook would create one)
        return []
    with course.gradebook() as gradebook:
        known = {a.name: a.duedate for a in gradebook.assignments}
    lines = []
    for name in earlier:
        if name not in known:
            continue
        due = known[name]
        end = late_window_end(course, due)
        if due is None:
            lines.append(f"{name} has no due date, so its students may still submit: the release of {assignment} "
                         f"contains the reference solution of {name}")
        elif end is None:
            lines.append(f"{name} (due {due:%Y-%m-%d %H:%M} UTC) accepts late work that earns points at any time "
                         f"under the late policy: the release of {assignment} contains its reference solution")
        elif end > now:
            lines.append(f"{name}'s late window is open until {end:%Y-%m-%d %H:%M} UTC (due {due:%Y-%m-%d %H:%M} "
                         f"plus the late policy's maximum): the release of {assignment} contains the reference "
                         f"solution of {name}")
        else:
            for student, mine in sorted(still_open(course, name, due, now).items()):
                lines.append(f"{_still_earns(student, name, mine)}: the release of {assignment} contains the "
                             f"reference solution of {name}")
    return lines


def _still_earns(student: str, assignment: str, mine: StudentDeadline) -> str:
    """'ada has an extension on 01 (deadline ...) and can earn points on it until ...'."""
    until = (f" and can earn points on it until {mine.late_window_end:%Y-%m-%d %H:%M} UTC"
             if mine.late_window_end is not None else "")
    return f"{student} has an extension on {assignment} (deadline {mine.due:%Y-%m-%d %H:%M} UTC){until}"


# Final feedback shows a student's graded work (and the graders' comments on it): released to an
# on-time classmate while an extended student can still submit, it can reach that student's hands
# before their deadline. The extended student's own feedback reaches only them.
def early_feedback(course: Course, assignment: str, recipients: list[str],
                   now: datetime.datetime | None = None) -> list[str]:
    """One line per student with an extension on ``assignment`` who can still earn points on it
    while feedback would be released to a classmate among ``recipients``: releasing it now could
    hand that student a classmate's graded work."""
    lines = []
    for student, mine in sorted(still_open(course, assignment, now=now).items()):
        others = sorted(set(recipients) - {student})
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            lines.append(f"{_still_earns(student, assignment, mine)}: the feedback of {shown} would be in "
                         f"classmates' hands before then")
    return lines
