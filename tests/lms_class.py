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


def synced_class(tmp_path: Path, settings: str = "", **kwargs):
    """The 30 members synced into a course's gradebook, the assignment graded; the platform running.
    ``settings``: lines added to the course's nbgrader_config.py."""
    from course_tools.course_dir import Course
    from course_tools.lms.roster import sync

    platform, course = platform_and_course(tmp_path, **kwargs)
    if settings:
        config = course.root / "nbgrader_config.py"
        config.write_text(config.read_text() + settings)
        course = Course(course.root)
    platform.__enter__()
    sync(course)
    grade_class(course)
    return platform, course


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


def user_ids(course) -> dict[str, str]:
    from course_tools.lms.ledger import Ledger

    with Ledger(course.db_url) as ledger:
        return {row["student"]: uid for uid, row in ledger.members().items()}


def assert_platform_holds_the_export(platform, course):
    """The platform holds grades.csv's final score of each student, each from one score post."""
    users = user_ids(course)
    held = platform.held_scores()
    expected = export_scores(course)
    assert {users[s] for s in expected} == set(held)
    for student, (score, maximum) in expected.items():
        assert held[users[student]] == (score, maximum), student
    per_user = {}
    for post in platform.posts:   # no duplicate: one stored post per student and score (progress posts aside)
        if "scoreGiven" not in post:
            continue
        key = (post["lineitem"], post["userId"], post["scoreGiven"], post["comment"])
        per_user[key] = per_user.get(key, 0) + 1
    assert max(per_user.values()) == 1, [k for k, n in per_user.items() if n > 1]
