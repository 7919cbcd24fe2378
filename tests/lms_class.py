"""A class in an LMS, for the tests of `course lms`: 30 members on the test platform
(tests/lms_platform.py), a course folder registered with it, and a graded assignment built
directly in the gradebook (nbgrader's API: nothing is graded)."""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from lms_platform import INSTRUCTOR, LEARNER, TA, Platform

ASSIGNMENT = "04_conv_backward"
UUID = "535FA085-f9bb-4d4d-8ce3-3c4b6db7ab7c"   # a Canvas-like id: 36 characters, upper case: no account name


def members() -> list[dict]:
    """30 members: an instructor, a TA, a dropped student, a non-ASCII name, an unsafe id, 25 more learners."""
    people = [
        {"user_id": "prof", "roles": [INSTRUCTOR], "given_name": "Pat", "family_name": "Professor"},
        {"user_id": "ta-lee", "roles": [TA], "given_name": "Lee", "family_name": "Assistant"},
        {"user_id": "gone", "roles": [LEARNER], "given_name": "Gone", "family_name": "Away", "status": "Inactive"},
        {"user_id": "zoe", "roles": [LEARNER], "given_name": "Zoë", "family_name": "Ñúñez-Øster",
         "email": "zoe@example.edu"},
        {"user_id": UUID, "roles": [LEARNER], "given_name": "Uma", "family_name": "Uuid", "email": "uma@example.edu"},
    ]
    people += [{"user_id": f"s{n:02d}", "roles": [LEARNER], "given_name": f"Student{n}", "family_name": "Test",
                "email": f"s{n:02d}@example.edu"} for n in range(1, 26)]
    for person in people:
        person.setdefault("status", "Active")
        person["name"] = f"{person['given_name']} {person['family_name']}"
    assert len(people) == 30
    return people


def tool_key(tmp_path: Path) -> tuple[Path, dict]:
    from course_tools.lms import keys

    path = tmp_path / "keys" / "tool.pem"
    return path, json.loads(keys.generate(path, tmp_path / "exchange"))


def course_on(platform: Platform, tmp_path: Path, key: Path, timeout: float = 5.0, db_url: str | None = None):
    from course_tools.course_dir import Course, init_course

    course = init_course(tmp_path / "course", "lmstest", exchange=tmp_path / "exchange", db_url=db_url)
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + platform.settings()
                      + f'c.LMS.private_key_file = r"{key}"\nc.LMS.timeout = {timeout}\n')
    return Course(course.root)


def platform_and_course(tmp_path: Path, db_url: str | None = None, **kwargs):
    key, jwk = tool_key(tmp_path)
    platform = Platform(jwk, members(), **kwargs)
    return platform, course_on(platform, tmp_path, key, db_url=db_url)


def grade_class(course, skip: tuple[str, ...] = ("s25",), pending: tuple[str, ...] = ("s24",),
                late: tuple[str, ...] = ("s23",)) -> None:
    """The assignment in the gradebook, with a 10-point autograded task and a 5-point written answer;
    each gradebook student submitted (but ``skip``), the written answer graded (but ``pending``'s),
    ``late`` students lost 2 points."""
    due = datetime.datetime(2027, 3, 1, 12, 0)
    with course.gradebook() as gradebook:
        gradebook.add_assignment(ASSIGNMENT, duedate=due)
        gradebook.add_notebook(ASSIGNMENT, ASSIGNMENT)
        gradebook.add_grade_cell("task", ASSIGNMENT, ASSIGNMENT, max_score=10, cell_type="code")
        gradebook.add_grade_cell("written", ASSIGNMENT, ASSIGNMENT, max_score=5, cell_type="markdown")
        for number, student in enumerate(sorted(s.id for s in gradebook.students)):
            if student in skip:
                continue
            submission = gradebook.add_submission(ASSIGNMENT, student, timestamp=due)
            task = gradebook.find_grade("task", ASSIGNMENT, ASSIGNMENT, student)
            task.auto_score, task.needs_manual_grade = (number * 37 % 101) / 10.0, False
            written = gradebook.find_grade("written", ASSIGNMENT, ASSIGNMENT, student)
            if student not in pending:
                written.manual_score, written.needs_manual_grade = (number % 6) * 0.75, False
            if student in late:
                submission.notebooks[0].late_submission_penalty = 2.0
        gradebook.db.commit()


def set_manual(course, student: str, score: float) -> None:
    with course.gradebook() as gradebook:
        grade = gradebook.find_grade("written", ASSIGNMENT, ASSIGNMENT, student)
        grade.manual_score, grade.needs_manual_grade = score, False
        gradebook.db.commit()


def export_scores(course) -> dict[str, tuple[float, float]]:
    """{student: (score, max_score)} as grades.csv has them."""
    from course_tools.grades_csv import export_rows

    with course.gradebook() as gradebook:
        return {r["student_id"]: (float(r["score"]), float(r["max_score"]))
                for r in export_rows(gradebook, [ASSIGNMENT])}
