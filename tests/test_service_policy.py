"""What the grading service's policy promises a student (service/policy.py, worker.py, pages.py,
serve.py's queue positions), on a real course folder and a real SQLite queue, and cheap: every
submission here is decided before any hidden suite runs (closed, over the limit, feedback
off), finds its result stored (as an unchanged resubmission does), or meets a grader that
fails (the launcher's stand-in, for the retries). tests/test_service.py grades for real."""
from __future__ import annotations

import datetime
import html
import json
import re
import subprocess
import sys
import textwrap
import time

import nbformat
import pytest

from course_tools.build import release_notebook
from course_tools.course_dir import Course, init_course
from course_tools.grading.results import ResultStore
from course_tools.grading.route import grading_error, result_key
from course_tools.grading.settings import GradingSettings
from course_tools.service import worker as worker_module
from course_tools.service.intake import copy_folder
from course_tools.service.pages import NOT_GRADED_YET
from course_tools.service.policy import Policy, policy_of
from course_tools.service.publish import feedback_folder
from course_tools.service.queue import DONE, GRADING_ERROR, QUEUED, Queue, claimant
from course_tools.service.serve import TYPICAL_GRADING_SECONDS, Service
from course_tools.service.stats import queue_summary
from course_tools.service.worker import GRADING_TRIES, Worker

A = "01_forward_ops"
T0 = datetime.datetime(2026, 12, 2, 9, 30)   # naive UTC, as the queue keeps times
SETTINGS = GradingSettings()                  # the bundle's own release (no course versions)


@pytest.fixture
def course(tmp_path) -> Course:
    return init_course(tmp_path / "course", "demo", tmp_path / "exchange")


@pytest.fixture
def queue(course):
    queue = Queue(course.db_url)
    yield queue
    queue.close()


def _text(page: str) -> str:
    """What a reader sees: tags out, entities decoded (so a message's own "<b>" shows as such)."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _submit(course: Course, queue: Queue, student: str, n: int, at: datetime.datetime = T0,
            tag: str | None = None) -> tuple[int, str]:
    """A submission as intake.py leaves it (its copy in the course folder, a queued row): the
    blank release, made a program of its own by ``tag``; (row id, its feedback file's name)."""
    folder = f"{student}+{A}+{n}"
    nb = nbformat.read(str(release_notebook(A)), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"tag = {tag or folder!r}"))
    (copy_folder(course) / folder).mkdir(parents=True)
    nbformat.write(nb, str(copy_folder(course) / folder / f"{A}.ipynb"))
    name = f"{student}-{n}.html"
    return queue.enqueue(A, student, folder, at, None, {A: name}), name


def _page(course: Course, name: str) -> str:
    return _text((feedback_folder(course.exchange, course.course_id) / name).read_text())


def _row(queue: Queue, row_id: int) -> dict:
    return next(r for r in queue.rows() if r["id"] == row_id)


class NeverGrades:
    """A launcher that must not be reached: these submissions are decided before any grading."""
    def grade(self, assignment, notebook, settings=None):
        raise AssertionError(f"{notebook} was graded")


def _worker(course, queue, policy: Policy, grader=None, settings=SETTINGS) -> Worker:
    return Worker(course, queue, settings, lambda assignment: policy, claimant(), grader or NeverGrades())


RESULT = {"assignment": A, "tasks": {
    "forward_add": {"score": 2.0, "points": 2.0, "checks": [{"check": "adds", "passed": True, "message": ""}]},
    "forward_transpose": {"score": 1.0, "points": 3.0, "checks": [
        {"check": "default axes", "passed": True, "message": ""},
        {"check": "batched", "passed": False, "message": "wrong shape (2, 3, 4) <b>", "case": "3-d"}],
        "diagnosis": {"title": "reverses every axis", "explanation": "swap the last two.", "where": "the notes"}}}}


def _stored(course: Course, row_id: int, queue: Queue) -> None:
    """RESULT stored under the row's notebook's key: the row is an unchanged resubmission."""
    row = _row(queue, row_id)
    notebook = copy_folder(course) / row["folder"] / f"{A}.ipynb"
    ResultStore(course.root).put(A, result_key(A, notebook, SETTINGS), RESULT)


@pytest.mark.parametrize("mode", ["checks", "scores", "none"])
def test_each_feedback_mode_shows_what_it_promises_of_a_stored_result(course, queue, mode):
    row_id, name = _submit(course, queue, "ada", 1)
    _stored(course, row_id, queue)
    assert _worker(course, queue, Policy(feedback=mode)).work_one()
    page, row = _page(course, name), _row(queue, row_id)
    assert (row["state"], row["outcome"], row["counted"]) == (DONE, "reused", False)   # no attempt used
    assert not (copy_folder(course) / row["folder"]).exists()   # the service's copy, removed once closed
    if mode == "none":
        assert "Feedback before the deadline is off for 01_forward_ops" in page
        assert "forward_transpose" not in page and "wrong shape" not in page and "points" not in page.lower()
        return
    assert "1 of 2 tasks pass every hidden check" in page
    assert "forward_transpose: \N{BALLOT X} failed" in page and "forward_add: \N{CHECK MARK} passed" in page
    assert "First failing check: batched (3-d)" in page and "wrong shape (2, 3, 4) <b>" in page   # shown as text
    assert "known mistake: reverses every axis" in page
    assert "so this submission used no graded attempt; 0 of 5 are used today (UTC day). 5 are left." in page
    if mode == "checks":
        assert "points" not in page.lower()
    else:
        assert "Points: 3 of 5" in page and "forward_transpose: \N{BALLOT X} failed (1 / 3 points)" in page


def test_feedback_none_hands_a_receipt_without_grading_a_new_notebook(course, queue):
    row_id, name = _submit(course, queue, "ada", 1)
    assert _worker(course, queue, Policy(feedback="none")).work_one()
    assert (_row(queue, row_id)["outcome"], _row(queue, row_id)["gradings"]) == ("hidden", 0)
    assert "kept for the final grading" in _page(course, name)


def test_after_the_late_window_the_service_stops_grading_that_assignment(course, queue):
    with open(course.root / "nbgrader_config.py", "a") as config:
        config.write("\nc.PercentPerDay.percent_per_day = 50\n")   # a started second late day earns nothing
    due = T0 - datetime.timedelta(days=1, hours=1)
    policy = policy_of(Course(course.root), A, due)
    assert policy.closes == due + datetime.timedelta(days=1) and policy.closed(T0) and not policy.closed(policy.closes)
    late, late_page = _submit(course, queue, "ada", 1, at=due + datetime.timedelta(hours=20))   # late, earns half
    _stored(course, late, queue)
    closed, closed_page = _submit(course, queue, "ada", 2, at=T0)
    worker = _worker(course, queue, policy)
    assert worker.work_one() and worker.work_one()
    assert _row(queue, late)["outcome"] == "reused" and "tasks pass" in _page(course, late_page)
    assert _row(queue, closed)["outcome"] == "closed" and _row(queue, closed)["gradings"] == 0
    assert "The late window of 01_forward_ops ended at 2026-12-02 08:30 UTC" in _page(course, closed_page)
    # A policy whose penalty never reaches 100% never closes.
    with open(course.root / "nbgrader_config.py", "a") as config:
        config.write("\nc.PercentPerDay.max_percent = 60\n")
    assert policy_of(Course(course.root), A, due).closes is None


def test_a_submission_past_the_days_attempts_says_when_the_next_graded_attempt_is_possible(course, queue):
    first, _ = _submit(course, queue, "ada", 1)
    me = claimant()
    row = queue.claim(me, lambda r: 60)
    assert row.id == first and queue.take_attempt(row, 1)   # ada's one graded attempt of the day
    queue.finish(row, me, DONE, "graded", counted=True)
    later, name = _submit(course, queue, "ada", 2, at=T0 + datetime.timedelta(hours=14))   # 23:30, same UTC day
    other, _ = _submit(course, queue, "ben", 3)
    _stored(course, other, queue)
    worker = _worker(course, queue, Policy(attempts_per_day=1))
    assert worker.work_one() and worker.work_one()
    assert _row(queue, later)["outcome"] == "over_limit" and not _row(queue, later)["counted"]
    page = _page(course, name)
    assert "Today's graded attempts of 01_forward_ops are used up (1 a day, UTC" in page
    assert "Your next graded attempt is possible from 2026-12-03 00:00 UTC" in page
    assert _row(queue, other)["outcome"] == "reused"   # another student's limit is their own


def test_pending_pages_say_how_many_are_ahead_and_about_how_long(course, queue):
    service = Service(course, workers=2, settings=SETTINGS)
    try:
        ids = [_submit(course, service.queue, f"s{n}", n) for n in range(5)]
        me = claimant()
        graded = service.queue.claim(me, lambda r: 60)   # s0's, being graded: no pending page of its own
        service._show_pending()
        folder = feedback_folder(course.exchange, course.course_id)
        assert not (folder / ids[0][1]).exists()
        typical = round(TYPICAL_GRADING_SECONDS)          # nothing graded today yet: the estimate
        texts = [_page(course, name) for _, name in ids[1:]]
        # Two workers: those 0-1 ahead wait for one grading, 2-3 ahead for two.
        assert f"1 ahead of you, about {typical} s" in texts[0]
        assert f"2 ahead of you, about {2 * typical} s" in texts[1]
        assert f"4 ahead of you, about {3 * typical} s" in texts[3]
        service.queue.finish(graded, me, DONE, "graded")
        service._show_pending()
        assert "it is next" in _page(course, ids[1][1]) and "3 ahead of you" in _page(course, ids[4][1])
    finally:
        service.queue.close()


class FailsFor:
    """A launcher whose grading fails (as route.grading_error reports a sandbox that cannot
    start), after ``seconds``; counts its calls."""
    def __init__(self, seconds: float = 0.0):
        self.seconds, self.calls = seconds, 0

    def grade(self, assignment, notebook, settings=None):
        self.calls += 1
        time.sleep(self.seconds)
        return grading_error(assignment, "the sandbox could not start (no space left on device)")


def test_a_grading_error_is_retried_a_bounded_number_of_times_then_reported(course, queue, monkeypatch, capsys):
    from course_tools.cli import main as course_command

    monkeypatch.setattr(worker_module, "RETRY_AFTER_SECONDS", 0.5)
    row_id, name = _submit(course, queue, "ada", 1)
    grader = FailsFor()
    worker = _worker(course, queue, Policy(), grader)
    assert worker.work_one()
    row = _row(queue, row_id)
    assert (row["state"], row["attempts"], row["claimed_by"]) == (QUEUED, 1, None)   # back in the queue
    assert "no space left" in row["error"] and not worker.work_one()                 # not before its back-off
    assert queue_summary(queue.rows())["retrying"] == 1
    capsys.readouterr()
    assert course_command(["status", "--course", str(course.root)]) == 0
    out = capsys.readouterr().out
    assert "1 waiting (1 of them to be retried after a grading error)" in out
    assert f"RETRY ada {A}" in out and "after 1 failed try: " in out and "no space left" in out
    for _ in range(GRADING_TRIES - 1):
        time.sleep(1.1)
        assert worker.work_one()
    row = _row(queue, row_id)
    assert (row["state"], row["attempts"], grader.calls) == (GRADING_ERROR, GRADING_TRIES, GRADING_TRIES)
    assert row["scores"] is None and not row["counted"]
    assert NOT_GRADED_YET in _page(course, name)
    assert queue_summary(queue.rows())["errors"] == 1
    capsys.readouterr()
    assert course_command(["status", "--course", str(course.root)]) == 0
    assert f"GRADING ERROR ada {A}" in capsys.readouterr().out


def test_a_grading_that_ran_out_of_its_time_limit_costs_its_attempt_and_is_not_graded_again(course, queue):
    """A notebook that sleeps used to hold a worker for the whole limit, end as a grading error
    that gave its attempt back, and do so again at every resubmission. Now the attempt stays
    used, and the same program, resubmitted (by anyone), is not graded again."""
    first, name = _submit(course, queue, "ada", 1)
    with queue.engine.begin() as conn:   # the intake's fingerprint of the notebook (same program, same value)
        conn.exec_driver_sql("UPDATE course_grading_queue SET fingerprint = 'same-program'")
    again, again_name = _submit(course, queue, "ada", 2, tag=f"ada+{A}+1")
    other, _ = _submit(course, queue, "ada", 3, tag="changed")
    with queue.engine.begin() as conn:
        conn.exec_driver_sql(f"UPDATE course_grading_queue SET fingerprint = 'same-program' WHERE id = {again}")
    grader = FailsFor(seconds=1.1)
    worker = _worker(course, queue, Policy(attempts_per_day=2), grader, settings=GradingSettings(notebook_seconds=1))
    assert worker.work_one()
    row = _row(queue, first)
    assert (row["state"], row["outcome"], row["counted"], grader.calls) == (GRADING_ERROR, "timed_out", True, 1)
    assert "ran for more than 1 s, its time limit" in _page(course, name) and "counts as one of" in _page(course, name)
    assert worker.work_one()                      # the same program again: a receipt, no grading, no attempt
    row = _row(queue, again)
    assert (row["outcome"], row["counted"], grader.calls) == ("timed_out_before", False, 1)
    assert "not graded again before the deadline" in _page(course, again_name)
    assert worker.work_one()                      # a changed notebook: the day's second attempt, graded
    assert (_row(queue, other)["outcome"], _row(queue, other)["counted"], grader.calls) == ("timed_out", True, 2)


DECIDER = textwrap.dedent("""
    import json, sys, time
    from sqlalchemy.engine import Connection, Engine
    from course_tools.service.queue import Queue

    # Every transaction starts 50 ms late and every statement takes 20 ms longer, so that
    # another process's decision falls between a count and its update unless one transaction
    # (one lock) holds them together.
    execute, begin = Connection.execute, Engine.begin
    def slow_execute(self, *args, **kwargs):
        result = execute(self, *args, **kwargs)
        time.sleep(0.02)
        return result
    def late_begin(self, *args, **kwargs):
        time.sleep(0.05)
        return begin(self, *args, **kwargs)
    Connection.execute, Engine.begin = slow_execute, late_begin

    queue, mine = Queue(sys.argv[1]), int(sys.argv[2])
    rows = [r for r in queue.waiting() if int(r.folder.rsplit("+", 1)[1]) % 4 == mine]
    print("ready", flush=True)
    sys.stdin.readline()   # all four begin together
    print(json.dumps([r.id for r in rows if queue.take_attempt(r, 1)]))
""")


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_four_processes_deciding_attempts_at_once_give_each_student_exactly_one(course, database, request):
    """8 students with 4 submissions each on one day, a limit of 1: four processes, one per
    submission, walk the students in the same order and start deciding at the same moment, each
    statement slowed down. A take_attempt that counted and updated in two transactions counts
    2-4 attempts for most students here (measured on both databases)."""
    db_url = course.db_url if database == "sqlite" else request.getfixturevalue("postgres_url")
    queue = Queue(db_url)
    for student in range(8):
        for n in range(4):
            _submit(course, queue, f"s{student:02d}", student * 4 + n, tag=f"{student}-{n}")
    deciders = [subprocess.Popen([sys.executable, "-c", DECIDER, db_url, str(p)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for p in range(4)]
    assert [p.stdout.readline() for p in deciders] == ["ready\n"] * 4
    for p in deciders:
        p.stdin.write("go\n")
        p.stdin.flush()
    taken = [json.loads(p.communicate(timeout=120)[0]) for p in deciders]   # the ids each one counted
    assert all(p.returncode == 0 for p in deciders)
    counted = [r["student"] for r in queue.rows() if r["counted"]]
    queue.close()
    assert sorted(counted) == [f"s{s:02d}" for s in range(8)], f"attempts counted per student: {counted}"
    assert sum(len(t) for t in taken) == 8


def test_a_row_whose_claimants_all_died_with_it_is_a_grading_error_not_handed_to_host_after_host(course, queue):
    """A notebook that takes its host down (or hosts killed under it) comes back after each
    lease; past GRADING_TRIES claims it is a grading error with the "not graded yet" page,
    never graded on yet another host, never a score."""
    row_id, name = _submit(course, queue, "ada", 1)
    for n in range(GRADING_TRIES):
        dead = f"host-{n}:{100 + n}:1:dead"
        assert queue.claim(dead, lambda r: -1).id == row_id    # its lease ran out at once
        assert queue.reclaim(claimant()) == 1
    assert _worker(course, queue, Policy()).work_one()          # NeverGrades: no grading is started
    row = _row(queue, row_id)
    assert (row["state"], row["attempts"], row["scores"]) == (GRADING_ERROR, GRADING_TRIES + 1, None)
    assert f"claimed {GRADING_TRIES + 1} times" in row["error"]
    assert NOT_GRADED_YET in _page(course, name)
