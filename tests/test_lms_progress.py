"""The grading service's progress posts (c.LMS.post_progress: course_tools/lms/progress.py and
service/progress.py) against the real LTI platform on loopback (tests/lms_platform.py), and what
`course status` and `course report` say of the LMS (lms/summary.py).

Cheap: the submissions are the queue's rows as the intake leaves them, and the one run of the
service grades them with a stand-in launcher (tests/test_service.py grades for real)."""
from __future__ import annotations

import datetime
import os
import signal
import threading
import time

import pytest
from lms_class import ASSIGNMENT, UUID, assert_platform_holds_the_export, synced_class, user_ids

pytest.importorskip("pylti1p3")
pytest.importorskip("lti1p3platform")

T0 = datetime.datetime(2027, 2, 27, 9, 30)   # naive UTC, as the queue keeps times
ON = "c.LMS.post_progress = True\n"


def _arrive(queue, student: str, n: int = 1, **values) -> int:
    """A submission of ``student`` as the intake leaves it: a queued row (``values``: a closed one)."""
    return queue.enqueue(ASSIGNMENT, student, f"{student}+{ASSIGNMENT}+{n}", T0 + datetime.timedelta(minutes=n),
                         None, {}, **values)


def _graded(queue, row_id: int) -> None:
    """The row as the service's worker closes a graded submission."""
    from sqlalchemy import update

    from course_tools.service.queue import DONE, submissions

    with queue.engine.begin() as conn:
        conn.execute(update(submissions).where(submissions.c.id == row_id).values(state=DONE, outcome="graded"))


def _progress_of(platform) -> dict[str, list[str]]:
    """{user id: the gradingProgress of each progress post the platform stored, in order}."""
    found: dict[str, list[str]] = {}
    for post in platform.progress_posts():
        assert post["activityProgress"] == "Submitted" and "scoreMaximum" not in post, post
        found.setdefault(post["userId"], []).append(post["gradingProgress"])
    return found


def test_progress_follows_each_submission_never_a_score_and_never_after_the_push(tmp_path, capsys):
    """Pending on arrival, PendingManual once graded (04 has written answers), nothing twice, nothing
    for a non-learner, a dropped student or a refused folder; the roster's user id, never the notebook's;
    after `course lms push` the student's final score stays (no progress post clears it); status and
    report say what the LMS holds and what is pending."""
    from course_tools.cli.report import report
    from course_tools.cli.status import status
    from course_tools.lms.push import push
    from course_tools.service.progress import Poster
    from course_tools.service.queue import DONE, Queue

    platform, course = synced_class(tmp_path)
    queue = Queue(course.db_url)
    with platform:
        users = user_ids(course)
        mapped = next(s for s, uid in users.items() if uid == UUID)   # the Canvas-like id's account name
        rows = {s: _arrive(queue, s) for s in ("s01", "s02", mapped, "prof", "gone")}
        _arrive(queue, "s03", state=DONE, outcome="refused")          # inbound refused it: no submission
        poster = Poster(course, queue)
        first = poster.round()
        assert sorted(first.sent) == sorted(["s01", "s02", mapped]) and not first.stopped
        assert {s for s, _ in first.skipped} == {"prof", "gone"}
        assert _progress_of(platform) == {"s01": ["Pending"], "s02": ["Pending"], UUID: ["Pending"]}
        assert platform.held_scores() == {}                           # no provisional score in the LMS

        before = len(platform.requests)
        assert poster.round().requests == 0 and len(platform.requests) == before   # nothing due: no request
        again = _arrive(queue, "s02", 2)                              # a second submission: still Pending
        _graded(queue, rows["s01"])
        assert poster.round().sent == ["s01"]
        assert _progress_of(platform)["s01"] == ["Pending", "PendingManual"]   # written answers wait

        capsys.readouterr()
        status(course, ASSIGNMENT)
        assert "LMS: no score pushed yet; progress from the grading service: 3 shown by the LMS." \
            in capsys.readouterr().out

        from course_tools.lms.ledger import Ledger

        with Ledger(course.db_url) as ledger:   # a progress post under way: the push waits for it, then sends
            holding, last_held = threading.Event(), []

            def post_under_way():
                with ledger.pushing(ASSIGNMENT, for_progress=True):
                    holding.set()
                    time.sleep(2)
                    last_held.append(time.monotonic())

            threading.Thread(target=post_under_way).start()
            assert holding.wait(10)
            assert len(push(course, ASSIGNMENT).sent) == 27           # the final scores, once the lock was free
            assert time.monotonic() > last_held[0]
        _arrive(queue, "s01", 3)                                      # a late resubmission after the push
        _graded(queue, again)
        after = poster.round()
        assert not after.sent and {"04_conv_backward s01", "04_conv_backward s02"} <= set(after.final)
        assert len(platform.progress_posts()) == 4
        assert_platform_holds_the_export(platform, course)            # every final score still held

        for student in users:                                         # as `course collect` leaves them
            (course.folder("submitted") / student / ASSIGNMENT).mkdir(parents=True)
        capsys.readouterr()
        report(course, ASSIGNMENT)
        out = capsys.readouterr().out
        assert "LMS: 27 held by the LMS." in out
        assert f"the next `course lms push {ASSIGNMENT}` sends nothing: the LMS is up to date" in out
        page = (course.root / "reports" / f"{ASSIGNMENT}.html").read_text()
        assert "<h2>The LMS</h2>" in page and "27 held by the LMS" in page
    queue.close()


class Grades:
    """A launcher that grades at once (the stand-in of pool.py's fork server)."""
    def __init__(self):
        self.calls = 0

    def grade(self, assignment, notebook, settings=None):
        self.calls += 1
        return {"assignment": assignment, "tasks": {"conv_backward": {
            "score": 3.0, "points": 4.0, "checks": [{"check": "shapes", "passed": True, "message": ""}]}}}

    def warm_up(self):
        pass

    def close(self):
        pass


def _submitted(course, queue, student: str) -> int:
    """A queued submission with its copy in the service's folder (the release notebook, made a program
    of its own)."""
    from course_tools.build import release_notebook
    from course_tools.service.intake import copy_folder

    folder = copy_folder(course) / f"{student}+{ASSIGNMENT}+1"
    folder.mkdir(parents=True)
    text = release_notebook(ASSIGNMENT).read_text().replace('"cells": [', f'"cells": [{{"cell_type": "code", '
                                                            f'"id": "who", "metadata": {{}}, "source": "who = {student!r}", '
                                                            f'"outputs": [], "execution_count": null}},', 1)
    (folder / f"{ASSIGNMENT}.ipynb").write_text(text)
    return _arrive(queue, student)


def test_an_lms_answering_500_leaves_the_grading_untouched_and_the_progress_is_posted_once_when_it_is_back(
        tmp_path):
    """`course serve --once` with the LMS failing (every request a 500): each submission is graded as
    without an LMS, nothing is stored in the LMS; a later round posts each student's progress once.
    An LMS that does not answer in time stops a round at its first request (c.LMS.timeout)."""
    from course_tools.grading.settings import GradingSettings
    from course_tools.lms.ledger import Ledger
    from course_tools.service.serve import Service

    platform, course = synced_class(tmp_path, settings=ON + "c.LMS.timeout = 0.5\n")
    service = Service(course, 1, GradingSettings())
    service.grader = grader = Grades()
    for student in ("s01", "s02", "s03"):
        _submitted(course, service.queue, student)
    platform.down = 500
    with platform:
        started = time.monotonic()
        assert service.run(once=True) == 0
        rows = service.queue.rows()
        assert [(r["state"], r["outcome"]) for r in rows] == [("done", "graded")] * 3 and grader.calls == 3
        assert platform.posts == [] and platform.requests      # asked, and it stored nothing
        assert time.monotonic() - started < 30

        platform.down = "timeout"
        platform.delay = 1.0
        before = len(platform.requests)
        started = time.monotonic()
        assert service.progress.round().stopped
        assert time.monotonic() - started < 5 and len(platform.requests) - before <= 2   # the token, once more

        platform.down = None
        back = service.progress.round()
        assert sorted(back.sent) == ["s01", "s02", "s03"] and not back.waiting
        assert _progress_of(platform) == {s: ["PendingManual"] for s in ("s01", "s02", "s03")}
        assert service.progress.round().requests == 0
        with Ledger(course.db_url) as ledger:
            assert {r["state"] for r in ledger.progress(ASSIGNMENT).values()} == {"sent"}


def test_a_service_killed_between_a_submission_and_its_post_posts_it_once_after_the_restart(tmp_path):
    """The poster of a service (a process of its own, forked) is killed with SIGKILL while its first
    request to the LMS is out, after the submissions arrived: nothing was posted; the next round
    posts each student's progress once, and nothing twice."""
    from course_tools.course_dir import Course
    from course_tools.lms.ledger import Ledger
    from course_tools.service.progress import Poster
    from course_tools.service.queue import Queue

    platform, course = synced_class(tmp_path, settings=ON)
    queue = Queue(course.db_url)
    for student in ("s04", "s05", "s06"):
        _arrive(queue, student)
    platform.hold_request = "/token"
    with platform:
        child = os.fork()
        if child == 0:   # the service's poster, in a process the test can kill -9
            try:
                Poster(Course(course.root), Queue(course.db_url)).round()
            finally:
                os._exit(0)
        try:
            assert platform.held.wait(30), "the poster never asked the LMS"
        finally:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        platform.hold_request = None
        platform.release.set()
        with Ledger(course.db_url) as ledger:
            assert ledger.progress(ASSIGNMENT) == {}
        after = Poster(course, queue).round()   # the restarted service's first round
        assert sorted(after.sent) == ["s04", "s05", "s06"]
        assert _progress_of(platform) == {s: ["Pending"] for s in ("s04", "s05", "s06")}
        assert Poster(course, queue).round().requests == 0
    queue.close()
