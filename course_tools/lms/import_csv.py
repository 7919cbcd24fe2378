"""The grade import files of Canvas and Moodle, for a course whose LMS has no LTI registration:
`course export --format canvas|moodle`. The scores are grades.csv's (grades_csv.export_rows:
the same numbers `course export` and `course lms push` give), one column per assignment.

Canvas (Grades > Import, "Import Grades from CSV"): the first five columns are Canvas's own,
``Student, ID, SIS User ID, SIS Login ID, Section``; then one column per assignment, named as the
assignment is (a new name makes a new assignment); the second row starts with ``Points Possible``
and gives each assignment's maximum. Canvas matches a row by ID, else SIS User ID, else SIS Login
ID: the course's student id is written as the SIS Login ID (a hub's user name is the institution's
login name), ID is left empty (Canvas's numeric id is not known here); the student column is
"Last, First" as Canvas writes it.

Moodle (Grade administration > Import > CSV file): any header row; the instructor maps one column
to the user (``Map from`` -> ``Map to``: username, e-mail address or ID number) and each grade
column to a grade item (or a new one). Columns: ``First name, Last name, Username, Email address,
ID number`` and one per assignment; grades are plain numbers with a '.' decimal point.
"""
from __future__ import annotations

import csv
from pathlib import Path

from ..course_dir import Course
from .registration import LmsError

CANVAS_FIRST = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_FIRST = ["First name", "Last name", "Username", "Email address", "ID number"]
FORMATS = ("canvas", "moodle")


def _table(course: Course) -> tuple[list[str], dict[str, float], dict[str, dict], dict[tuple[str, str], str]]:
    """(assignments, their maximum, students' rows, {(student, assignment): score}) from grades.csv's rows."""
    from ..grades_csv import export_rows

    with course.gradebook() as gradebook:
        try:
            rows = export_rows(gradebook)
        except ValueError as err:
            raise LmsError(str(err)) from None
    if not rows:
        raise LmsError("the gradebook has no assignment or no student yet: nothing to export")
    assignments = list(dict.fromkeys(row["assignment"] for row in rows))
    maxima = {row["assignment"]: row["max_score"] for row in rows}
    students = {row["student_id"]: row for row in rows}
    scores = {(row["student_id"], row["assignment"]): row["score"] for row in rows}
    return assignments, maxima, students, scores


def write(course: Course, kind: str, to: Path) -> int:
    """Write the ``kind`` ("canvas" or "moodle") import file to ``to``; returns the number of students."""
    if kind not in FORMATS:
        raise LmsError(f"unknown format {kind!r}: one of {', '.join(FORMATS)}")
    assignments, maxima, students, scores = _table(course)
    with open(to, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle, lineterminator="\n")   # quoted where needed: "Last, First" holds a comma
        if kind == "canvas":
            out.writerow(CANVAS_FIRST + assignments)
            out.writerow(["Points Possible", "", "", "", ""] + [maxima[a] for a in assignments])
            for sid, row in sorted(students.items()):
                name = ", ".join(p for p in (row["last_name"], row["first_name"]) if p) or sid
                out.writerow([name, "", "", sid, ""] + [scores.get((sid, a), "") for a in assignments])
        else:
            out.writerow(MOODLE_FIRST + assignments)
            for sid, row in sorted(students.items()):
                out.writerow([row["first_name"], row["last_name"], sid, row["email"], sid]
                             + [scores.get((sid, a), "") for a in assignments])
    return len(students)
