"""nbgrader's own feedback release (formgrader's Release Feedback button, `nbgrader
release_feedback`) with `course feedback`'s check.

Final feedback shows a student's graded work. `course feedback` refuses to release a classmate's
while a student with an extension can still earn points on the assignment (deadlines.early_feedback);
the course's nbgrader_config.py puts this class in the place of nbgrader's,

    c.ExchangeFactory.release_feedback = "course_tools.exchange_feedback.CourseReleaseFeedback"

so that the button makes the same check and fails, saying why, where `course feedback` refuses.
`course feedback` has checked already (or was told --force): it sets ``checked``.
"""
from __future__ import annotations

import glob
import os

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from traitlets import Bool


class CourseReleaseFeedback(ExchangeReleaseFeedback):
    checked = Bool(False, help="set by `course feedback`, which has made the extension check (or was told "
                               "--force): release as nbgrader does").tag(config=True)

    def start(self):
        if not self.checked:
            lines = self._too_early()
            if lines:
                self.fail(f"not releasing feedback on {self.coursedir.assignment_id}: " + "; ".join(lines)
                          + f". Release it after that deadline, or with `course feedback "
                          f"{self.coursedir.assignment_id} --force`")
        return super().start()

    def _too_early(self) -> list[str]:
        from .course_dir import Course
        from .deadlines import early_feedback

        self.init_src()
        excluded = set(filter(None, (self.coursedir.student_id_exclude or "").split(",")))
        # The students whose pages this release would copy: feedback/<student>/<assignment>/*.html.
        recipients = {os.path.basename(os.path.dirname(os.path.dirname(page)))
                      for page in glob.glob(os.path.join(self.src_path, "*.html"))} - excluded
        if not recipients:
            return []
        return early_feedback(Course(self.coursedir.root), self.coursedir.assignment_id, sorted(recipients))
