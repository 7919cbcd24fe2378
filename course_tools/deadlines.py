"""A course's deadlines beyond the due date: when late work stops earning points under the late
policy of the course folder's nbgrader_config.py. Used by `course release` (does releasing the
next assignment reveal a solution still worth points?) and the grading service (when it stops
grading an assignment); both sit above this module, which imports neither.
"""
from __future__ import annotations

import datetime

from .course_dir import Course


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
