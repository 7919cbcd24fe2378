"""The instructor's policy for feedback before the deadline, per assignment.

It lives in the course folder's nbgrader_config.py, beside nbgrader's own settings (`course
init` writes the defaults there):

    c.GradingService.feedback = "checks"      # what a student sees: checks | scores | none
    c.GradingService.attempts_per_day = 5     # graded attempts per student, assignment and UTC day
    c.GradingService.max_queued = 3           # submissions one student may have waiting to be graded
    c.GradingService.assignments = {          # per assignment, overriding the two above
        "07_experiments": {"feedback": "none"},
        "04_conv_backward": {"feedback": "scores", "attempts_per_day": 3},
    }

    checks  per task: passed or failed, the first failing check's message, the diagnosis; no points
    scores  the same with each task's points and the total
    none    a receipt only ("received, graded after the deadline")

A submission that finds ``max_queued`` of its student's submissions of that assignment waiting
is not queued: it is kept for the final grading and its page says so (one student's copies
cannot fill the queue; claims take students in turn, queue.py). Submissions past the daily limit are kept (the final grading takes the latest) and their page
says when the next graded attempt is possible. Late work follows the course's late policy:
once the late window is over (no late submission can earn points, deadlines.py's
late_window_end), the service grades that assignment no more. A student with an extension
(`course extend`) has their own deadline, late window and extra attempts a day
(``Policy.for_student``, from deadlines.deadline_of).
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace

from course_student.words import noun

from ..course_dir import Course, CourseError
from ..deadlines import StudentDeadline, deadlines_of, late_window_end

FEEDBACK_MODES = ("checks", "scores", "none")
DEFAULT_FEEDBACK = "checks"
DEFAULT_ATTEMPTS_PER_DAY = 5
DEFAULT_MAX_QUEUED = 3
SETTINGS = ("feedback", "attempts_per_day", "max_queued")
SECTION = "GradingService"


@dataclass(frozen=True)
class Policy:
    feedback: str = DEFAULT_FEEDBACK
    attempts_per_day: int = DEFAULT_ATTEMPTS_PER_DAY
    max_queued: int = DEFAULT_MAX_QUEUED
    due: datetime.datetime | None = None            # naive UTC, from the gradebook
    closes: datetime.datetime | None = None         # the end of the late window; None: never
    extended: dict[str, StudentDeadline] = field(default_factory=dict)   # students with an extension in force
    extended_from: datetime.datetime | None = None  # for_student's: the assignment's due date, when extended
    zone: str | None = None                         # c.Course.timezone, in which pages show times besides UTC

    def for_student(self, student: str) -> "Policy":
        """This policy as it applies to ``student``: their own deadline and late window, and the
        extension's extra graded attempts a day (deadlines.deadline_of)."""
        own = self.extended.get(student)
        if own is None:
            return self
        return replace(self, due=own.due, closes=own.late_window_end, extended_from=self.due,
                       attempts_per_day=self.attempts_per_day + own.extra_attempts, extended={})

    def closed(self, submitted_at: datetime.datetime) -> bool:
        """Whether a submission at ``submitted_at`` came after the late window (no service grading)."""
        return self.closes is not None and submitted_at > self.closes

    @staticmethod
    def next_attempt(submitted_at: datetime.datetime) -> datetime.datetime:
        """When the next graded attempt is possible: the next UTC midnight."""
        return datetime.datetime.combine(submitted_at.date() + datetime.timedelta(days=1), datetime.time())


def _checked(assignment: str, where: str, values: dict) -> dict:
    unknown = set(values) - set(SETTINGS)
    if unknown:
        raise CourseError(f"{where}: unknown {noun(len(unknown), 'setting')} {', '.join(sorted(unknown))} for "
                          f"{assignment} (known: {', '.join(SETTINGS)})")
    if "feedback" in values and values["feedback"] not in FEEDBACK_MODES:
        raise CourseError(f"{where}: feedback {values['feedback']!r} for {assignment} must be one of "
                          f"{', '.join(FEEDBACK_MODES)}")
    if "attempts_per_day" in values:
        attempts = values["attempts_per_day"]
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
            raise CourseError(f"{where}: attempts_per_day {attempts!r} for {assignment} must be a whole number "
                              f">= 0 (0: no graded attempts before the deadline)")
    if "max_queued" in values:
        most = values["max_queued"]
        if isinstance(most, bool) or not isinstance(most, int) or most < 1:
            raise CourseError(f"{where}: max_queued {most!r} for {assignment} must be a whole number >= 1")
    return values


def policy_of(course: Course, assignment: str, due: datetime.datetime | None) -> Policy:
    """The policy of ``assignment`` in ``course`` (due: its due date in the gradebook)."""
    where = f"{course.root}/nbgrader_config.py (c.{SECTION})"
    base = _checked("every assignment", where, {
        key: value for key in SETTINGS
        if (value := course._setting(SECTION, key, None)) is not None})
    per_assignment = course._setting(SECTION, "assignments", {}) or {}
    if not isinstance(per_assignment, dict):
        raise CourseError(f"{where}: assignments must be a dict {{assignment id: {{setting: value}}}}")
    own = per_assignment.get(assignment, {})
    if not isinstance(own, dict):
        raise CourseError(f"{where}: assignments[{assignment!r}] must be a dict such as {{'feedback': 'scores'}}")
    values = {**base, **_checked(assignment, where, dict(own))}
    return Policy(feedback=values.get("feedback", DEFAULT_FEEDBACK),
                  attempts_per_day=values.get("attempts_per_day", DEFAULT_ATTEMPTS_PER_DAY),
                  max_queued=values.get("max_queued", DEFAULT_MAX_QUEUED),
                  due=due, closes=late_window_end(course, due), extended=deadlines_of(course, assignment, due),
                  zone=_zone_name(course))


def _zone_name(course: Course) -> str | None:
    from ..extensions import course_zone  # refuses a c.Course.timezone that names no zone

    zone = course_zone(course)
    return None if zone is None else str(zone)
