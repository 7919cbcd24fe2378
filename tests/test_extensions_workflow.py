"""Per-student deadlines (issue 41) through the workflow's own steps: `course collect` reading the
exchange, and a class of four graded by `course grade` whose scores, `course status`, `course
report` and `course export` agree with penalties and deadlines worked out by hand below.

The course's late policy is `course init`'s: 10 % of the score per started day late.
"""
from __future__ import annotations

import datetime
import time

import pytest

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


# ---------------------------------------------------------------------------------- a class of four
# 01 was released RELEASED and is due DUE: 10 days between them. The collected submission times
# are written as `course collect` leaves them (collect itself is tested above), so that each
# lateness is exact. 10 % per started day late:
#   ada  on time               submits DUE - 1 h        -> no penalty
#   ben  no extension          submits DUE + 1 d 2 h    -> 26 h late: 2 started days, 20 %
#   cat  --until DUE + 3 d     submits DUE + 2 d        -> on time for her (20 % without the extension)
#   dan  --all --by 50 %       his deadline DUE + 5 d (half of the 10 days); submits DUE + 7 d 1 h
#                              -> 49 h after his own deadline: 3 started days, 30 % (80 % from DUE)
RELEASED, DUE = D(2026, 11, 10, 12, 0), D(2026, 11, 20, 12, 0)
CLASS = {   # student: (submitted, own deadline, seconds late, penalty in % of the score)
    "ada": (DUE - datetime.timedelta(hours=1), DUE, 0, 0),
    "ben": (DUE + datetime.timedelta(days=1, hours=2), DUE, 26 * 3600, 20),
    "cat": (DUE + 2 * DAY, DUE + 3 * DAY, 0, 0),
    "dan": (DUE + datetime.timedelta(days=7, hours=1), DUE + 5 * DAY, 49 * 3600, 30),
}


@pytest.mark.slow   # one release, two hidden-suite gradings, four autogrades, a report and an export
def test_a_class_of_four_agrees_everywhere_with_the_deadlines_worked_out_by_hand(tmp_path, capsys):
    """`course grade`'s scores, `course status`, `course report` and `course export` agree, student
    by student, with CLASS: the same correct notebook from everyone (graded once: full marks), so
    that each final score is the penalty worked out by hand."""
    import csv

    from course_tools import release_versions
    from course_tools.build import release_notebook
    from course_tools.demo_class import filled_release
    from course_tools.grading.suite.run import graded_tasks
    from course_tools.paths import ROOT

    import nbformat
    from grading_support import require_sandbox

    require_sandbox()   # `course grade` grades in bubblewrap
    made = init_course(tmp_path / "course", "four", tmp_path / "exchange", students=STUDENTS)
    folder = str(made.root)
    release_versions.record(made.root, A, ROOT / "assignments" / A, now=RELEASED.replace(tzinfo=datetime.timezone.utc))
    assert course(["release", A, "--due", f"{DUE:%Y-%m-%d %H:%M} UTC", "--course", folder]) == 0
    assert _extend(made, A, "cat", "--until", f"{DUE + 3 * DAY:%Y-%m-%d %H:%M} UTC") == 0
    assert _extend(made, "--all", "dan", "--by", "50%") == 0
    work = filled_release(A)    # the same correct notebook from everyone: graded once, full marks
    for student, (submitted, *_) in CLASS.items():
        where = made.folder("submitted") / student / A
        where.mkdir(parents=True)
        nbformat.write(work, str(where / f"{A}.ipynb"))
        (where / "timestamp.txt").write_text(submitted.strftime(FORMAT))
    total = sum(graded_tasks(release_notebook(A)).values())
    capsys.readouterr()

    assert course(["grade", A, "--workers", "2", "--course", folder]) == 0
    with made.gradebook() as gradebook:
        graded = {s: (gradebook.find_submission(A, s).score, gradebook.find_submission(A, s).total_seconds_late,
                      gradebook.find_submission(A, s).late_submission_penalty or 0.0) for s in CLASS}
    for student, (_, own, late, percent) in CLASS.items():
        assert graded[student][0] == total and graded[student][1] == late, student
        assert graded[student][2] == pytest.approx(total * percent / 100), student

    capsys.readouterr()
    assert course(["status", A, "--course", folder]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line[:4] in
            tuple(f"{s} " for s in CLASS)}
    assert "26.0 h late" in rows["ben"] and "2.0 days late" in rows["dan"]
    assert "late" not in rows["ada"] and "late" not in rows["cat"]
    for student, (_, own, late, percent) in CLASS.items():
        final = f"{total * (100 - percent) / 100:g}/{total:g}"
        assert final in rows[student].replace(" ", ""), (student, rows[student])
        assert rows[student].rstrip().endswith(f"{own:%Y-%m-%d %H:%M}") == (own != DUE), (student, rows[student])

    assert course(["report", A, "--course", folder]) == 0
    said = capsys.readouterr().out
    for student, (_, own, late, percent) in CLASS.items():
        assert (f"late: {student}," in said) == (late > 0), student
        assert (f"own deadline: {student}, {own:%Y-%m-%d %H:%M} UTC" in said) == (own != DUE), student
    assert f"late: dan, 2.0 days, penalty {total * 0.3:g}" in said

    assert course(["export", "--to", str(tmp_path / "grades.csv"), "--course", folder]) == 0
    with open(tmp_path / "grades.csv", newline="") as handle:
        exported = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == A}
    for student, (_, own, late, percent) in CLASS.items():
        row = exported[student]
        assert float(row["late_submission_penalty"]) == pytest.approx(total * percent / 100, abs=0.01), student
        assert float(row["score"]) == pytest.approx(total * (100 - percent) / 100, abs=0.01), student
        assert row["student_duedate"] == str(own), (student, row)   # the deadline its penalty counts from
