"""nbgrader's own release (formgrader's Release button, `nbgrader release_assignment`) through
`course release`.

nbgrader's default release copies the assignment into the exchange and nothing else. `course
release` first refuses a release that would reveal the solution of an assignment that still
accepts late work (an extended student's included), registers the release in the gradebook,
records its version (release_versions.py: what each student was given is what they are graded
against) and labels the notebooks. The course's nbgrader_config.py puts this class in its place,

    c.ExchangeFactory.release_assignment = "course_tools.exchange_release.CourseRelease"

so that the Release button runs `course release ID` (as a program: nothing below the CLI imports
it) with its checks, and fails, showing why, where `course release` refuses. `course release`
itself runs nbgrader's release with ``--CourseRelease.through_course=True``: the copy alone.
"""
from __future__ import annotations

import os
import subprocess
import sys

from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from traitlets import Bool

THROUGH_COURSE = "--CourseRelease.through_course=True"   # what `course release` adds to nbgrader's command


class CourseRelease(ExchangeReleaseAssignment):
    through_course = Bool(False, help="set by `course release`, which has made its checks and records: "
                                      "copy the release into the exchange only").tag(config=True)

    def start(self):
        if self.through_course:
            return super().start()
        assignment, root = self.coursedir.assignment_id, self.coursedir.root
        self.log.info("Releasing %s with `course release %s`: its checks, its version record and labels", assignment,
                      assignment)
        done = subprocess.run([sys.executable, "-m", "course_tools.cli", "release", assignment, "--course", root],
                              capture_output=True, text=True, cwd=root, env=os.environ.copy())
        for line in done.stdout.splitlines():
            if line.strip():
                self.log.info("%s", line)
        if done.returncode != 0:
            said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            self.fail(f"`course release {assignment}` refused the release: " + " ".join(said[-6:]))
