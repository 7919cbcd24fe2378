"""Errors a user can fix, and the check that an assignment id exists."""
from __future__ import annotations

from course_lib import tasks


class CourseError(Exception):
    """Something the user can fix; the message says how."""


def check_assignment(assignment: str) -> str:
    """``assignment`` if the course has it; CourseError listing the course's ids if not."""
    if assignment not in tasks.ASSIGNMENTS:
        raise CourseError(f"unknown assignment {assignment!r}; the course has: {', '.join(tasks.ASSIGNMENTS)}")
    return assignment
