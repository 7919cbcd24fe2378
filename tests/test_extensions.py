"""Per-student deadlines (issue 41): `course extend` / `course extensions` through the real CLI on
a real course folder (SQLite), deadlines.deadline_of, the release check, the grading service's
policy and nbgrader's late penalty, each against values worked out by hand below.

The course's late policy is `course init`'s: 10 % per started day late, so late work earns
points for 9 whole days after a deadline (the 10th started day costs 100 %).
"""
from __future__ import annotations

import datetime

import pytest

from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course
from course_tools.deadlines import StudentDeadline, deadline_of
from course_tools.extensions import Extensions
from course_tools.paths import ROOT
from course_tools import release_versions

A, B, C = "01_forward_ops", "02_backward_ops", "03_ndarray"
D = datetime.datetime
DUE_A, RELEASED_A = D(2027, 3, 20, 12, 0), D(2027, 3, 10, 12, 0)     # 10 days between release and due date
DUE_B, RELEASED_B = D(2027, 4, 10, 12, 0), D(2027, 3, 31, 12, 0)     # 10 days as well
STUDENTS = [("ada", "Ada", "L"), ("ben", "Ben", "M"), ("cat", "Cat", "N")]


def _gradebook(course: Course, dues: dict) -> None:
    with course.gradebook(must_exist=False) as gradebook:
        for name, due in dues.items():
            gradebook.update_or_create_assignment(name, duedate=due)


def _record_release(course: Course, assignment: str, when: D) -> None:
    release_versions.record(course.root, assignment, ROOT / "assignments" / assignment,
                            now=when.replace(tzinfo=datetime.timezone.utc))


@pytest.fixture
def semester(tmp_path) -> Course:
    """Three students; 01 due DUE_A (released RELEASED_A), 02 due DUE_B (released RELEASED_B), 03
    in the gradebook without a due date."""
    made = init_course(tmp_path / "course", "ext", tmp_path / "exchange", students=STUDENTS)
    _gradebook(made, {A: DUE_A, B: DUE_B, C: None})
    _record_release(made, A, RELEASED_A)
    _record_release(made, B, RELEASED_B)
    return made


def _extend(semester: Course, *args: str) -> int:
    return course(["extend", *args, "--course", str(semester.root)])


def _history(semester: Course) -> list:
    store = Extensions.of(semester)
    if store is None:
        return []
    try:
        return store.history()
    finally:
        store.close()


# ---------------------------------------------------------------------------------- deadline_of
def test_a_student_without_an_extension_has_the_assignments_deadline(semester):
    assert deadline_of(semester, A, "ben") == StudentDeadline(
        due=DUE_A, extended=False, extra_attempts=0, late_window_end=D(2027, 3, 29, 12, 0), original_due=DUE_A)


def test_by_a_duration_moves_the_deadline_and_the_late_window_with_it(semester, capsys):
    assert _extend(semester, A, "ada", "--by", "2d", "--attempts", "2", "--reason", "illness") == 0
    assert "ada: 01_forward_ops due 2027-03-22 12:00 UTC, 2 extra graded attempts a day" in capsys.readouterr().out
    assert deadline_of(semester, A, "ada") == StudentDeadline(
        due=D(2027, 3, 22, 12, 0), extended=True, extra_attempts=2, late_window_end=D(2027, 3, 31, 12, 0),
        original_due=DUE_A)
    assert deadline_of(semester, A, "ben").due == DUE_A     # a classmate keeps the assignment's deadline
    assert deadline_of(semester, B, "ada").due == DUE_B     # and ada keeps 02's


def test_by_fifty_percent_on_every_assignment_is_half_the_time_between_release_and_due_date(semester):
    assert _extend(semester, "--all", "cat", "--by", "50%", "--reason", "accommodation") == 0
    # 01: released 03-10 12:00, due 03-20 12:00: 10 days, half of it 5 days -> 03-25 12:00; 02 likewise
    assert deadline_of(semester, A, "cat").due == D(2027, 3, 25, 12, 0)
    assert deadline_of(semester, B, "cat").due == D(2027, 4, 15, 12, 0)
    assert deadline_of(semester, B, "cat").late_window_end == D(2027, 4, 24, 12, 0)
    assert {(g.assignment, g.student) for g in _history(semester)} == {(A, "cat"), (B, "cat")}   # not 03: no due date


def test_a_date_without_a_zone_is_read_in_the_courses_zone_across_the_change_to_summer_time(semester):
    with open(semester.root / "nbgrader_config.py", "a") as config:
        config.write('c.Course.timezone = "Europe/Berlin"\n')
    fresh = Course(semester.root)
    # 01 is due 2027-03-20 12:00 UTC (13:00 in Berlin, CET). Berlin's clocks go forward on Sunday
    # 2027-03-28, so 13:00 on 03-29 is CEST (UTC+2): 11:00 UTC, not 12:00.
    assert _extend(fresh, A, "ada", "--until", "2027-03-29 13:00") == 0
    assert deadline_of(fresh, A, "ada").due == D(2027, 3, 29, 11, 0)
    assert _extend(fresh, A, "ben", "--until", "2027-03-27 13:00") == 0   # still winter time: UTC+1
    assert deadline_of(fresh, A, "ben").due == D(2027, 3, 27, 12, 0)
    assert _extend(fresh, A, "cat", "--until", "2027-03-29 13:00 UTC") == 0   # a zone given wins
    assert deadline_of(fresh, A, "cat").due == D(2027, 3, 29, 13, 0)


def test_shorten_allows_a_deadline_before_the_due_date(semester):
    assert _extend(semester, A, "ada", "--until", "2027-03-19 12:00 UTC", "--shorten") == 0
    assert deadline_of(semester, A, "ada").due == D(2027, 3, 19, 12, 0)
    assert deadline_of(semester, A, "ada").late_window_end == D(2027, 3, 28, 12, 0)


# ---------------------------------------------------------------------------------- the audit trail
def test_grant_and_revocation_are_both_kept_and_the_revocation_restores_the_due_date(semester, capsys):
    assert _extend(semester, A, "ada", "ben", "--by", "1d", "--reason", "lab down") == 0
    assert _extend(semester, A, "ada", "--revoke", "--reason", "granted by mistake") == 0
    assert deadline_of(semester, A, "ada") == StudentDeadline(DUE_A, False, 0, D(2027, 3, 29, 12, 0), DUE_A)
    assert deadline_of(semester, A, "ben").due == D(2027, 3, 21, 12, 0)
    rows = _history(semester)
    assert [(g.student, g.until, g.reason) for g in rows] == [
        ("ada", D(2027, 3, 21, 12, 0), "lab down"), ("ben", D(2027, 3, 21, 12, 0), "lab down"),
        ("ada", None, "granted by mistake")]
    assert all(g.granted_by for g in rows) and rows[0].granted_at <= rows[2].granted_at
    capsys.readouterr()
    assert course(["extensions", A, "--course", str(semester.root)]) == 0
    listed = capsys.readouterr().out
    assert "ben" in listed and "ada" not in listed
    assert course(["extensions", "--history", "--course", str(semester.root)]) == 0
    listed = capsys.readouterr().out
    assert "revoked" in listed and "granted by mistake" in listed and listed.count("ada") == 2


@pytest.mark.parametrize("args, message", [
    ([A, "zed", "--by", "1d"], "unknown student 'zed'"),
    (["99_nope", "ada", "--by", "1d"], "unknown assignment '99_nope'"),
    (["04_conv_backward", "ada", "--by", "1d"], "04_conv_backward is not in the gradebook yet"),
    ([A, "ada", "--until", "the ides of march"], "cannot read the date"),
    ([A, "ada", "--until", "2027-03-25 12:00"], "has no time zone: add one"),
    ([A, "ada", "--until", "2027-03-25 12:00 Mars/Olympus"], "unknown time zone 'Mars/Olympus'"),
    ([A, "ada", "--by", "3 parsecs"], "cannot read the duration '3 parsecs'"),
    ([A, "ada", "--by=-2d"], "cannot read the duration '-2d'"),
    ([A, "ada", "--until", "2027-03-19 12:00 UTC"], "is before its due date 2027-03-20 12:00 UTC"),
    ([A, "ada", "--by", "1d", "--attempts", "-1"], "--attempts -1 must be a whole number >= 0"),
    ([C, "ada", "--by", "1d"], "03_ndarray has no due date, so --by has nothing to add to"),
    ([B, "cat", "--revoke"], "no extension in force for cat on 02_backward_ops"),
    ([A, "ada"], "one of the arguments --until --by --revoke is required"),
    ([A, "--section", "lab-1", "--by", "1d"], "unknown section 'lab-1': this course has no sections"),
    ([A, "--by", "1d"], "give at least one student id"),
])
def test_bad_input_is_refused_saying_what_is_wrong_and_changes_nothing(semester, capsys, args, message):
    assert _extend(semester, B, "ben", "--by", "1d") == 0     # something in the table to keep as it is
    before = _history(semester)
    capsys.readouterr()
    try:
        status = _extend(semester, *args)
    except SystemExit as stop:   # argparse's own refusals
        status = stop.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert _history(semester) == before


def test_fifty_percent_needs_a_recorded_release(tmp_path, capsys):
    made = init_course(tmp_path / "course", "ext", tmp_path / "exchange", students=STUDENTS)
    _gradebook(made, {A: DUE_A})
    assert _extend(made, A, "ada", "--by", "50%") == 2
    assert "no release before the due date is recorded for it" in capsys.readouterr().err
    assert _history(made) == []


def test_a_section_of_the_roster_is_extended_together_and_an_unknown_one_is_refused(tmp_path, capsys, monkeypatch):
    """The roster's section column reaches `course extend --section` through `course init --roster`
    (the student install, which init also builds, is left out here: it takes long and is tested
    on its own)."""
    from course_tools.cli import instructor

    monkeypatch.setattr(instructor, "_student_install", lambda out: "student install: not built in this test")
    roster = tmp_path / "roster.csv"
    roster.write_text("username,role,first_name,last_name,section\nprof,instructor,Pat,Q,\n"
                      "ada,student,Ada,L,lab 1\nben,student,Ben,M,lab 2\ncat,student,Cat,N,lab 1\n")
    assert course(["init", str(tmp_path / "course"), "--course-id", "sec", "--exchange", str(tmp_path / "exchange"),
                   "--roster", str(roster)]) == 0
    made = Course(tmp_path / "course")
    _gradebook(made, {A: DUE_A})
    capsys.readouterr()
    assert _extend(made, A, "--section", "lab 1", "--by", "1d", "--reason", "lab 1's machines were down") == 0
    assert {(g.student, g.until) for g in _history(made)} == {("ada", D(2027, 3, 21, 12, 0)),
                                                              ("cat", D(2027, 3, 21, 12, 0))}
    assert deadline_of(made, A, "ben").due == DUE_A
    before = _history(made)
    capsys.readouterr()
    assert _extend(made, A, "--section", "lab 3", "--by", "1d") == 2
    assert "unknown section 'lab 3': the roster's sections are 'lab 1', 'lab 2'" in capsys.readouterr().err
    assert _history(made) == before


# ---------------------------------------------------------------------------------- the release check
def _utc(delta: datetime.timedelta) -> str:
    return (datetime.datetime.now(datetime.timezone.utc) + delta).strftime("%Y-%m-%d %H:%M UTC")


def test_the_release_check_waits_for_an_extended_student_and_names_them(tmp_path, capsys):
    """01 was due 30 days ago (its window closed 21 days ago), so 02 could be released, but ada
    has until tomorrow: the release refuses, naming her and her deadline; once her window is over
    (her deadline moved to 15 days ago: window over 6 days ago) it releases."""
    made = init_course(tmp_path / "course", "order", tmp_path / "exchange", students=STUDENTS)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, second=0, microsecond=0)
    _gradebook(made, {A: now - datetime.timedelta(days=30)})
    tomorrow = now + datetime.timedelta(days=1)
    assert _extend(made, A, "ada", "--until", f"{tomorrow:%Y-%m-%d %H:%M} UTC") == 0
    capsys.readouterr()
    outbound = tmp_path / "exchange" / "order" / "outbound"
    assert course(["release", B, "--course", str(made.root)]) == 2
    out, err = capsys.readouterr()
    window = tomorrow + datetime.timedelta(days=9)
    assert (f"ada has an extension on 01_forward_ops (deadline {tomorrow:%Y-%m-%d %H:%M} UTC) and can earn points "
            f"on it until {window:%Y-%m-%d %H:%M} UTC") in out
    assert "ben" not in out and "--force" in err and not (outbound / B).exists()

    assert _extend(made, A, "ada", "--until", _utc(-datetime.timedelta(days=15))) == 0
    assert course(["release", B, "--course", str(made.root)]) == 0
    assert (outbound / B).is_dir()


# ---------------------------------------------------------------------------------- the service and the penalty
def test_the_service_policy_gives_the_extended_student_their_window_and_attempts(semester):
    from course_tools.service.policy import policy_of

    assert _extend(semester, A, "ada", "--by", "2d", "--attempts", "3") == 0
    policy = policy_of(Course(semester.root), A, DUE_A)
    ada, ben = policy.for_student("ada"), policy.for_student("ben")
    assert (ada.due, ada.closes, ada.attempts_per_day) == (D(2027, 3, 22, 12, 0), D(2027, 3, 31, 12, 0), 5 + 3)
    assert (ben.due, ben.closes, ben.attempts_per_day) == (DUE_A, D(2027, 3, 29, 12, 0), 5)
    after_bens_window = D(2027, 3, 30, 12, 0)
    assert ben.closed(after_bens_window) and not ada.closed(after_bens_window)


def test_the_service_grades_the_extended_student_after_the_classmates_window(semester):
    """Two submissions at the same moment, after the class's late window and within ada's: ben's
    is closed; ada's goes on (to the feedback-off receipt: nothing is graded here)."""
    import nbformat

    from course_tools.build import release_notebook
    from course_tools.grading.settings import GradingSettings
    from course_tools.service.intake import copy_folder
    from course_tools.service.policy import policy_of
    from course_tools.service.queue import Queue, claimant
    from course_tools.service.worker import Worker

    with open(semester.root / "nbgrader_config.py", "a") as config:
        config.write('c.GradingService.feedback = "none"\n')
    assert _extend(semester, A, "ada", "--by", "2d") == 0
    fresh = Course(semester.root)
    queue = Queue(fresh.db_url)
    try:
        at = D(2027, 3, 30, 12, 0)
        for student in ("ada", "ben"):
            folder = f"{student}+{A}+1"
            (copy_folder(fresh) / folder).mkdir(parents=True)
            nbformat.write(nbformat.read(str(release_notebook(A)), as_version=4),
                           str(copy_folder(fresh) / folder / f"{A}.ipynb"))
            queue.enqueue(A, student, folder, at, None, {A: f"{student}.html"})

        class NeverGrades:
            def grade(self, assignment, notebook, settings=None):
                raise AssertionError(f"{notebook} was graded")

        policy = policy_of(fresh, A, DUE_A)
        worker = Worker(fresh, queue, GradingSettings(), lambda assignment: policy, claimant(), NeverGrades())
        while worker.work_one():
            pass
        outcomes = {row["student"]: row["outcome"] for row in queue.rows()}
        pages = {student: (worker.feedback / f"{student}.html").read_text() for student in ("ada", "ben")}
    finally:
        queue.close()
    assert outcomes == {"ben": "closed", "ada": "hidden"}
    # Each page says the student's own deadline; only ada's is an extension (2 days after the 20th).
    assert ("Your deadline: 2027-03-22 12:00 UTC (your extension; the assignment&#x27;s due date is "
            "2027-03-20 12:00 UTC). This submission came 8 days after it, so it counts as late") in pages["ada"]
    assert "Your deadline: 2027-03-20 12:00 UTC. This submission came 10 days after it" in pages["ben"]
    assert "extension" not in pages["ben"]


def test_the_late_penalty_counts_from_the_students_own_deadline(semester):
    """nbgrader's late penalty reads the submission's lateness; `course grade` puts each student's
    extension into the gradebook first (deadlines.apply_to_gradebook)."""
    from course_tools.deadlines import apply_to_gradebook
    from course_tools.late_penalty import PercentPerDay

    submitted = D(2027, 3, 23, 12, 0, 1)      # 3 days and 1 s after 01's due date
    with semester.gradebook() as gradebook:
        for student in ("ada", "ben"):
            gradebook.update_or_create_submission(A, student, timestamp=submitted)
    assert _extend(semester, A, "ada", "--by", "2d") == 0
    apply_to_gradebook(semester, A, ["ada", "ben"])
    with semester.gradebook() as gradebook:
        late = {s: gradebook.find_submission(A, s).total_seconds_late for s in ("ada", "ben")}
    assert late == {"ada": 86400 + 1, "ben": 3 * 86400 + 1}
    penalty = PercentPerDay()
    assert penalty.late_submission_penalty("ada", 10.0, late["ada"]) == 2.0     # 2 started days: 20 %
    assert penalty.late_submission_penalty("ben", 10.0, late["ben"]) == 4.0     # 4 started days: 40 %

    assert _extend(semester, A, "ada", "--revoke") == 0       # the next grade applies the revocation
    apply_to_gradebook(semester, A, ["ada", "ben"])
    with semester.gradebook() as gradebook:
        assert gradebook.find_submission(A, "ada").total_seconds_late == 3 * 86400 + 1


def test_status_shows_a_students_own_deadline_where_it_differs(semester, capsys):
    assert _extend(semester, A, "ada", "--by", "2d") == 0
    assert _extend(semester, A, "cat", "--by", "0d", "--attempts", "1") == 0   # attempts only: same deadline
    capsys.readouterr()
    assert course(["status", A, "--course", str(semester.root)]) == 0
    out = capsys.readouterr().out
    assert "own deadline (UTC)" in out
    ada = next(line for line in out.splitlines() if line.startswith("ada "))
    assert "no submission yet" in ada and ada.rstrip().endswith("2027-03-22 12:00")
    assert "ben" not in out and "cat " not in out     # no extension; an extension that keeps the deadline


# ---------------------------------------------------------------------------------- final feedback
def test_feedback_waits_for_an_extended_student_and_names_them(tmp_path, capsys):
    """01 was due 30 days ago, ada has until tomorrow: `course feedback` refuses to release ben's
    (an on-time classmate's) feedback, naming ada and her deadline, and releases nothing; ada's
    own feedback alone, --force, and the time after her window are let through."""
    from course_tools.deadlines import early_feedback

    made = init_course(tmp_path / "course", "fb", tmp_path / "exchange", students=STUDENTS)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, second=0, microsecond=0)
    _gradebook(made, {A: now - datetime.timedelta(days=30)})
    tomorrow = now + datetime.timedelta(days=1)
    assert _extend(made, A, "ada", "--until", f"{tomorrow:%Y-%m-%d %H:%M} UTC") == 0
    for student in ("ada", "ben"):   # what `course grade` leaves (empty: nothing here gets that far)
        (made.folder("autograded") / student / A).mkdir(parents=True)
    capsys.readouterr()
    assert course(["feedback", A, "--course", str(made.root)]) == 2
    out, err = capsys.readouterr()
    window = tomorrow + datetime.timedelta(days=9)
    assert (f"ada has an extension on 01_forward_ops (deadline {tomorrow:%Y-%m-%d %H:%M} UTC) and can earn points "
            f"on it until {window:%Y-%m-%d %H:%M} UTC: the feedback of ben would be in classmates' hands") in out
    assert "not releasing feedback on 01_forward_ops" in err and "--force" in err
    assert not (tmp_path / "exchange" / "fb" / "feedback").exists()   # nothing released
    assert early_feedback(made, A, ["ada"]) == []               # her own feedback reaches only her

    # formgrader's Release Feedback button (nbgrader's release_feedback) makes the same check.
    for student in ("ada", "ben"):   # what generate_feedback leaves, and the submission it hashes
        page = made.folder("feedback") / student / A / f"{A}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>{student}'s graded work</p>")
        (page.parent / "timestamp.txt").write_text("2026-12-01 12:00:00.000000 UTC")
        (page.parent / "submission_secret.txt").write_text(f"{student}-secret")
        (made.folder("submitted") / student / A).mkdir(parents=True)
        (made.folder("submitted") / student / A / f"{A}.ipynb").write_text("{}")
    refused = made.api().release_feedback(A, "ben")
    assert not refused["success"] and "ada has an extension on 01_forward_ops" in refused["log"]
    assert not (tmp_path / "exchange" / "fb" / "feedback").exists()
    assert made.api().release_feedback(A, "ada")["success"]     # her own page, to her alone
    assert len(list((tmp_path / "exchange" / "fb" / "feedback").glob("*.html"))) == 1

    assert course(["feedback", A, "--force", "--course", str(made.root)]) == 1   # past the check, to nbgrader
    out, err = capsys.readouterr()
    assert "not releasing" not in err and "no feedback for ben: generate_feedback" in out

    later = now + datetime.timedelta(days=11)                   # ada's window is over
    assert early_feedback(made, A, ["ada", "ben"], now=later) == []
