"""Per-student deadlines (issue 41) through the workflow's own steps: `course collect` reading the
exchange, and a class of four graded by `course grade` whose scores, `course status`, `course
report` and `course export` agree with penalties and deadlines worked out by hand below.

The course's late policy is `course init`'s: 10 % of the score per started day late.
"""
from __future__ import annotations

import datetime
import time

from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course
from course_tools.deadlines import apply_to_gradebook
from course_tools.late_penalty import PercentPerDay
from course_tools.submission_times import FORMAT, parse_timestamp

A = "01_forward_ops"
D = datetime.datetime
DAY = datetime.timedelta(days=1)
STUDENTS = [("ada", "Ada", "L"), ("ben", "Ben", "M"), ("cat", "Cat", "N"), ("dan", "Dan", "O")]


def _now() -> D:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _course(tmp_path, due: D) -> Course:
    made = init_course(tmp_path / "course", "wf", tmp_path / "exchange", students=STUDENTS)
    with made.gradebook(must_exist=False) as gradebook:
        gradebook.update_or_create_assignment(A, duedate=due)
    return made


def _extend(made: Course, *args: str) -> int:
    return course(["extend", *args, "--course", str(made.root)])


def _drop(made: Course, student: str, notebook: str = '{"cells": []}') -> None:
    """A submission as nbgrader's submit leaves it in the exchange's inbound folder (02733)."""
    inbound = made.exchange / made.course_id / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    inbound.chmod(0o2733)
    claimed = _now().strftime(FORMAT)
    folder = inbound / f"{student}+{A}+{claimed}+x"
    folder.mkdir()
    (folder / f"{A}.ipynb").write_text(notebook)
    (folder / "timestamp.txt").write_text(claimed)
    time.sleep(0.02)


def test_collect_counts_lateness_from_the_students_own_deadline(tmp_path, capsys):
    """01 was due 2 days ago; ada has until tomorrow. Both submit now: `course collect` shows ben
    2 days late and ada on time, and the penalty (from the collected time) follows: ben 3 started
    days (30 %), ada none."""
    due = _now().replace(microsecond=0) - 2 * DAY
    made = _course(tmp_path, due)
    assert _extend(made, A, "ada", "--until", f"{due + 3 * DAY:%Y-%m-%d %H:%M:%S} UTC") == 0
    for student in ("ada", "ben"):
        _drop(made, student)
    capsys.readouterr()
    assert course(["collect", A, "--course", str(made.root)]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line[:4] in ("ada ", "ben ")}
    assert "2.0 days late" in rows["ben"] and "late" not in rows["ada"]

    collected = {s: parse_timestamp((made.folder("submitted") / s / A / "timestamp.txt").read_text())
                 for s in ("ada", "ben")}
    with made.gradebook() as gradebook:     # what autograde records from the collected timestamp.txt
        for student, when in collected.items():
            gradebook.update_or_create_submission(A, student, timestamp=when)
    apply_to_gradebook(made, A, ["ada", "ben"])
    with made.gradebook() as gradebook:
        late = {s: gradebook.find_submission(A, s).total_seconds_late for s in ("ada", "ben")}
    assert late["ada"] == 0 and 2 * 86400 < late["ben"] < 2 * 86400 + 60
    assert PercentPerDay().late_submission_penalty("ben", 10.0, late["ben"]) == 3.0
