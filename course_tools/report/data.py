"""What a graded assignment left behind, read without grading anything again.

    the gradebook (nbgrader's; SQLite or PostgreSQL)   scores per task, manual grading, lateness
    deadlines.deadlines_of                               each student's own deadline (extensions)
    the stored hidden-suite results (results.py)        every check, passed or not, why, diagnoses
    the grading-error record                             submissions the grader could not grade
    the grading log (grading_log.py)                      who entered each manual grade
    the collect record (inbound.py)                       exchange folders `course collect` refused

One ``StudentRecord`` per collected submission; ``ClassData`` adds the blank release's result
(graded by `course grade` as a reference) and the assignment's task table.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from pathlib import Path

from course_lib import tasks

from ..build import manual_tasks, release_notebook
from ..course_dir import Course
from ..deadlines import deadlines_of
from ..grading.results import BLANK_RELEASE, ResultStore
from ..grading.route import result_key
from ..submission_times import collected_time
from ..grading.settings import GradingSettings
from ..inbound import load_refusals
from ..grading.suite.run import graded_tasks


@dataclass
class TaskScore:
    score: float
    points: float
    manual: bool            # graded by hand (a written answer)
    pending: bool           # still waits for a grader


@dataclass
class StudentRecord:
    student: str
    submitted: datetime.datetime | None
    seconds_late: float
    penalty: float
    tasks: dict[str, TaskScore] = field(default_factory=dict)
    result: dict | None = None          # the hidden-suite result of the submitted notebook
    grading_error: str | None = None
    blank: bool = False                 # handed in the release as it was (same program)
    own_due: datetime.datetime | None = None   # the student's own deadline, where an extension moves it

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tasks.values())

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tasks.values())

    @property
    def final(self) -> float:
        return self.score - self.penalty

    def fraction(self, manual: bool) -> float | None:
        chosen = [t for t in self.tasks.values() if t.manual == manual and not t.pending]
        points = sum(t.points for t in chosen)
        return sum(t.score for t in chosen) / points if points else None


@dataclass
class ClassData:
    assignment: str
    points: dict[str, float]             # autograded task -> points
    manual_points: dict[str, float]      # hand-graded task -> points
    students: list[StudentRecord]
    blank: dict | None                   # the blank release's hidden-suite result, if graded
    errors: dict[str, dict]              # student -> {"error", "when"}
    graded_by: dict[tuple[str, str], str]  # (student, task) -> who entered the manual grade
    refused: list = field(default_factory=list)  # inbound.Refusal: exchange folders collect refused

    @property
    def graded(self) -> list[StudentRecord]:
        return [s for s in self.students if s.tasks]


def load(course: Course, assignment: str) -> ClassData:
    from nbgrader.api import MissingEntry

    from .grading_log import read_log

    store = ResultStore(course.root)
    own = {s: d.due for s, d in deadlines_of(course, assignment).items() if d.differs}
    notebook = release_notebook(assignment)
    points, manual = graded_tasks(notebook), manual_tasks(assignment)
    records = []
    with course.gradebook() as gradebook:
        for student in course.submitted_students(assignment):
            try:
                sub = gradebook.find_submission(assignment, student)
            except MissingEntry:
                records.append(StudentRecord(student, None, 0.0, 0.0, own_due=own.get(student)))
                continue
            record = StudentRecord(student, sub.timestamp, float(sub.total_seconds_late or 0.0),
                                   float(sub.late_submission_penalty or 0.0), own_due=own.get(student))
            for nb in sub.notebooks:
                for grade in nb.grades:
                    is_manual = grade.name in manual
                    record.tasks[grade.name] = TaskScore(float(grade.score or 0.0), float(grade.max_score),
                                                         is_manual, bool(grade.needs_manual_grade))
            records.append(record)
    # The key each student was last graded with (the bundle may have changed since), else today's,
    # against the release version the notebook belongs to (as `course grade` files it).
    settings = GradingSettings(course_root=str(course.root))
    blank_key = store.key_of_student(assignment, BLANK_RELEASE) or result_key(assignment, notebook, settings)
    for record in records:
        path = course.folder("submitted") / record.student / assignment / notebook.name
        key = store.key_of_student(assignment, record.student) or (
            result_key(assignment, path, settings.for_submission(record.student, collected_time(path.parent)))
            if path.exists() else None)
        record.result = store.get(assignment, key)
        record.blank = key is not None and key == blank_key
    errors = store.grading_errors(assignment)
    for record in records:
        if record.student in errors:
            record.grading_error = errors[record.student]["error"]
    blank = store.get(assignment, blank_key)
    return ClassData(assignment, points, manual, records, blank, errors, read_log(course.root, assignment),
                     load_refusals(course.root, assignment))


def progress(course: Course) -> tuple[list[str], dict[str, dict[str, float | None]]]:
    """Every assignment in the gradebook, and each student's final score (None: no submission)."""
    from nbgrader.api import MissingEntry

    with course.gradebook() as gradebook:
        assignments = [a.name for a in gradebook.assignments if a.name in tasks.ASSIGNMENTS]
        table: dict[str, dict[str, float | None]] = {}
        for student in gradebook.students:
            row = {}
            for name in assignments:
                try:
                    sub = gradebook.find_submission(name, student.id)
                    row[name] = float(sub.score) - float(sub.late_submission_penalty or 0.0)
                except MissingEntry:
                    row[name] = None
            table[student.id] = row
    return sorted(assignments, key=list(tasks.ASSIGNMENTS).index), table


def reports_folder(course: Course) -> Path:
    """Where reports go: next to the gradebook (the course folder)."""
    folder = course.root / "reports"
    folder.mkdir(exist_ok=True)
    return folder
