"""A running grading service follows an edit of its course's policy (c.GradingService in the
course folder's nbgrader_config.py) at its next scan, without a restart, and keeps the policy in
force while the file is saved half-way (does not load). Cheap: no grading, no exchange traffic."""
from __future__ import annotations

import pytest

from course_tools.course_dir import CourseError, init_course
from course_tools.grading.settings import GradingSettings
from course_tools.service.serve import Service

ASSIGNMENT = "04_conv_backward"


def test_an_edited_policy_applies_at_the_next_scan_and_a_broken_edit_keeps_the_last(tmp_path):
    course = init_course(tmp_path / "course", "policyedit", exchange=tmp_path / "exchange")
    service = Service(course, 1, GradingSettings.current(course_root=course.root))
    try:
        assert service.policy(ASSIGNMENT).attempts_per_day == 5   # course init's default
        config = course.root / "nbgrader_config.py"
        config.write_text(config.read_text() + f'\nc.GradingService.assignments = {{"{ASSIGNMENT}": '
                                                '{"attempts_per_day": 2, "feedback": "scores"}}\n')
        service._refresh_policies([ASSIGNMENT])   # what each scan does first
        assert (service.policy(ASSIGNMENT).attempts_per_day, service.policy(ASSIGNMENT).feedback) == (2, "scores")
        good = config.read_text()
        config.write_text(good + "c.GradingService.assignments = {\n")   # saved half-way
        service._refresh_policies([ASSIGNMENT])
        assert service.policy(ASSIGNMENT).attempts_per_day == 2
        with pytest.raises(CourseError, match="nbgrader_config.py"):   # with nothing in force yet: said
            service._refresh_policies(["05_pooling_backward"])
    finally:
        service.queue.close()
        service.grader.close()
