"""Each student's final score of an assignment, as `course export` writes it (grades_csv.export_rows:
late penalty, extensions and manual grades already in), turned into an AGS score.

The fields that decide whether a score must be sent again are its ``payload``: scoreGiven,
scoreMaximum, activityProgress, gradingProgress and the comment. The timestamp is not among them
(each post has its own, later than the last, as AGS asks).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..course_dir import Course
from .registration import LmsError


@dataclass(frozen=True)
class FinalScore:
    assignment: str
    student: str
    score: float          # after the late penalty: grades.csv's "score"
    maximum: float        # grades.csv's "max_score"
    penalty: float
    submitted: bool
    manual: bool          # written answers still wait for a grader

    def payload(self) -> dict:
        if not self.submitted:
            comment = f"{self.assignment}: no submission"
        else:
            comment = (f"{self.assignment}: {self.score:g} / {self.maximum:g}"
                       + (f" after a late penalty of {self.penalty:g}" if self.penalty else "")
                       + ("; written answers not graded yet" if self.manual else "")
                       + f". Feedback: on the course's hub, `course fetch {self.assignment} --feedback` "
                         f"(or the Assignments tab)")
        return {"scoreGiven": self.score, "scoreMaximum": self.maximum,
                "activityProgress": "Completed" if self.submitted else "Initialized",
                "gradingProgress": "PendingManual" if self.manual else "FullyGraded",
                "comment": comment}

    def payload_text(self) -> str:
        return json.dumps(self.payload(), sort_keys=True)


def final_scores(course: Course, assignment: str) -> list[FinalScore]:
    """One FinalScore per gradebook student (0 without a submission, as grades.csv has it)."""
    from nbgrader.api import Assignment, SubmittedAssignment

    from ..grades_csv import export_rows

    with course.gradebook() as gradebook:
        if assignment not in {a.name for a in gradebook.assignments}:
            raise LmsError(f"{assignment} is not in the gradebook: release and grade it first")
        try:
            rows = export_rows(gradebook, [assignment])
        except ValueError as err:
            raise LmsError(str(err)) from None
        manual = {sub.student.id: bool(sub.needs_manual_grade) for sub in gradebook.db.query(SubmittedAssignment)
                  .join(Assignment).filter(Assignment.name == assignment)}
    found = []
    for row in rows:
        found.append(FinalScore(assignment, row["student_id"], float(row["score"]), float(row["max_score"]),
                                float(row["late_submission_penalty"] or 0), row["student_id"] in manual,
                                manual.get(row["student_id"], False)))
    return found


def assignment_maximum(course: Course, assignment: str) -> float:
    """The assignment's maximum in the gradebook (its grade cells' points, as grades.csv's max_score)."""
    from nbgrader.api import MissingEntry

    with course.gradebook() as gradebook:
        try:
            maximum = float(gradebook.find_assignment(assignment).max_score or 0)
        except MissingEntry:
            raise LmsError(f"{assignment} is not in the gradebook: release it first") from None
    if maximum <= 0:
        raise LmsError(f"{assignment} has no points in the gradebook (no grade cells): nothing to post")
    return maximum
