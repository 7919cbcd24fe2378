"""The course's late policy, as an nbgrader late-submission plugin.

nbgrader ships two policies: no penalty, or zero for any lateness. Courses usually want
something in between: here each started day late costs ``percent_per_day`` percent of the
notebook's score, up to ``max_percent``. One second late is one started day.

    c.AssignLatePenalties.plugin_class = "course_tools.late_penalty.PercentPerDay"
    c.PercentPerDay.percent_per_day = 10      # in nbgrader_config.py
"""
from __future__ import annotations

import datetime
import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from course_student.words import plural

DAY_S = 24 * 3600


class PercentPerDay(LateSubmissionPlugin):
    percent_per_day = Float(10.0, help="Percent of the score lost per started day late").tag(config=True)
    max_percent = Float(100.0, help="The most a late submission can lose, in percent of its score").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        if total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / DAY_S)
        percent = min(self.max_percent, days * self.percent_per_day)
        self.log.info("%s is %s late: %g%% of %s", student_id, plural(days, "started day"), percent, plural(score, "point"))
        return round(score * percent / 100.0, 4)


def late_window_end(due: datetime.datetime, percent_per_day: float, max_percent: float):
    """The last moment a submission after ``due`` can still earn points under PercentPerDay, or
    None when late work earns points at any time (the penalty never reaches 100%).

    A submission ``t`` seconds late loses ``min(max_percent, ceil(t / day) * percent_per_day)``
    percent; it earns nothing once that is 100, i.e. from the D-th started day on, where
    D = ceil(100 / percent_per_day). So the window ends D - 1 whole days after the deadline.
    """
    if percent_per_day <= 0 or max_percent < 100:
        return None
    days_to_zero = math.ceil(100.0 / percent_per_day)
    return due + datetime.timedelta(days=days_to_zero - 1)
