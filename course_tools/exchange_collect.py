"""nbgrader's own collect (formgrader's Collect button, `nbgrader collect`) through inbound.py.

nbgrader's default collect follows links, opens FIFOs and trusts the folders' names and times
(inbound.py says how); the course's nbgrader_config.py puts this class in its place,

    c.ExchangeFactory.collect = "course_tools.exchange_collect.CourseCollect"

so that a TA who collects in formgrader gets exactly what `course collect` gets: the same
checks, the same choice of folder, the same recorded time, and the refusals kept for
`course status` and the report (and logged as warnings, which formgrader shows).
"""
from __future__ import annotations

from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect

from . import inbound


class CourseCollect(ExchangeCollect):
    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.inbound_path = Path(self.root) / self.coursedir.course_id / "inbound"
        if not self.inbound_path.is_dir():
            self.fail(f"Course not found: {self.inbound_path}")

    def copy_files(self):
        assignment = self.coursedir.assignment_id
        only = None if self.coursedir.student_id == "*" else self.coursedir.student_id
        outcome = inbound.collect(self.inbound_path, Path(self.coursedir.root) / self.coursedir.submitted_directory,
                                  assignment, ignore=list(self.coursedir.ignore),
                                  max_bytes=self.coursedir.max_file_size * 1024, only=only)
        inbound.save_refusals(Path(self.coursedir.root), assignment, outcome.refused, only)
        for got in outcome.collected:
            self.log.info("Collected %s of %s (%s), submitted %s UTC%s", got.folder, got.student, assignment,
                          f"{got.recorded:%Y-%m-%d %H:%M:%S}", f": {got.note}" if got.note else "")
        for refusal in outcome.refused:
            self.log.warning("REFUSED %s (in the name of %s): %s", refusal.folder, refusal.student, refusal.reason)
        if not outcome.collected and not outcome.refused:
            self.log.warning("No submissions of '%s' for course '%s' to collect", assignment, self.coursedir.course_id)
