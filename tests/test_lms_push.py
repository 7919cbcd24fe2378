"""`course lms push` (course_tools/lms/push.py) against a real LTI 1.3 platform on loopback
(tests/lms_platform.py: lti1p3platform's tokens and keys, its service endpoints): the platform ends
holding exactly grades.csv's final scores, a second push sends nothing, a changed manual grade sends
one score, and a flaky platform or a killed push ends, after the next push, with no duplicate."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from lms_class import ASSIGNMENT, assert_platform_holds_the_export, export_scores, set_manual, synced_class

pytest.importorskip("pylti1p3")
pytest.importorskip("lti1p3platform")


def test_the_platform_holds_the_exports_scores_and_a_second_push_sends_nothing(tmp_path, capsys):
    from course_tools.cli.status import status
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path)
    with platform:
        first = push(course, ASSIGNMENT)
        assert first.complete and len(first.sent) == 27 and not first.refused   # 28 learners, 1 dropped
        assert_platform_holds_the_export(platform, course)
        item = next(iter(platform.lineitems.values()))
        assert (item["resourceId"], item["label"], item["scoreMaximum"]) == (ASSIGNMENT, ASSIGNMENT, 15.0)
        by_user = {p["userId"]: p for p in platform.posts}
        assert by_user["s24"]["gradingProgress"] == "PendingManual"        # the written answer waits
        assert by_user["s01"]["gradingProgress"] == "FullyGraded"
        assert by_user["s25"]["activityProgress"] == "Initialized" and by_user["s25"]["scoreGiven"] == 0
        assert by_user["s23"]["activityProgress"] == "Completed" and "late penalty of 2" in by_user["s23"]["comment"]
        assert "course fetch 04_conv_backward --feedback" in by_user["s01"]["comment"]
        assert platform.token_scopes[-1:] == [sorted(["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                                                 "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                                                 "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"])]

        before = len(platform.requests)
        second = push(course, ASSIGNMENT)
        assert (second.planned, second.requests, second.up_to_date) == ([], 0, 27)
        assert len(platform.requests) == before   # not even a token

        capsys.readouterr()
        status(course, None)                      # course status: what the LMS holds, per assignment
        assert f"  {ASSIGNMENT}: 27 held by the LMS\n" in capsys.readouterr().out

        set_manual(course, "s05", 4.5)            # a late manual grade
        status(course, ASSIGNMENT)                # course status ID: who the next push sends, and why
        assert f"to send at the next `course lms push {ASSIGNMENT}` (changed): s05\n" in capsys.readouterr().out
        third = push(course, ASSIGNMENT)
        assert third.sent == ["s05"] and platform.score_posts() == 28
        assert_platform_holds_the_export(platform, course)
        status(course, ASSIGNMENT)
        assert "sends nothing: the LMS is up to date" in capsys.readouterr().out


def test_dry_run_says_what_would_change_and_sends_nothing(tmp_path):
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path)
    with platform:
        before = len(platform.requests)
        plan = push(course, ASSIGNMENT, dry_run=True)
        assert len(plan.planned) == 27 and {p.why for p in plan.planned} == {"new"}
        assert len(platform.requests) == before and not platform.posts


def test_a_platform_failing_every_third_request_ends_complete_with_no_duplicate(tmp_path):
    """Every third request fails: a 500 (not stored) or a timeout (stored, answered too late).
    Pushes run until one completes; the platform holds each score from exactly one post."""
    from course_tools.lms.push import push
    from course_tools.lms.registration import LmsError

    platform, course = synced_class(tmp_path)
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + "c.LMS.timeout = 0.3\n")
    from course_tools.course_dir import Course

    course = Course(course.root)
    platform.fail_every, platform.delay = 3, 0.6
    with platform:
        runs, unanswered = 0, 0
        while runs == 0 or push(course, ASSIGNMENT, dry_run=True).planned:
            runs += 1
            assert runs <= 8, "the pushes never completed"
            try:
                unanswered += len(push(course, ASSIGNMENT).unanswered)
            except LmsError:       # the token or line item request failed twice: nothing posted this time
                continue
        assert unanswered > 0 and platform.failures >= 3
        assert_platform_holds_the_export(platform, course)
        assert len(platform.posts) == 27   # stored posts: one per student


def test_a_push_killed_mid_push_is_completed_by_the_next_with_no_duplicate(tmp_path):
    """`course lms push` in a subprocess, killed with SIGKILL after the platform stored its 5th score and
    before the answer reached it: the next push finds that score on the platform and posts the rest."""
    from course_tools.lms.ledger import Ledger
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path)
    platform.hold_post = 5
    with platform:
        env = {**os.environ, "COURSE_DIR": str(course.root)}
        child = subprocess.Popen([sys.executable, "-m", "course_tools.cli", "lms", "push", ASSIGNMENT], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            assert platform.held.wait(60), child.communicate(timeout=5)[0]
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
        platform.release.set()
        with Ledger(course.db_url) as ledger:
            states = [row["state"] for row in ledger.scores(ASSIGNMENT).values()]
        assert states.count("sent") == 4 and states.count("sending") == 23   # the 5th: stored, unanswered
        outcome = push(course, ASSIGNMENT)
        assert outcome.complete and len(outcome.confirmed) == 1 and len(outcome.sent) == 22
        assert_platform_holds_the_export(platform, course)
        assert len(platform.posts) == 27


def test_the_ledger_works_in_a_postgresql_gradebook(tmp_path, postgres_url):
    """The course's database may be PostgreSQL (c.CourseDirectory.db_url): the same tables beside nbgrader's."""
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path, db_url=postgres_url)
    with platform:
        assert len(push(course, ASSIGNMENT).sent) == 27
        assert push(course, ASSIGNMENT).requests == 0
        set_manual(course, "s02", 0.5)
        assert push(course, ASSIGNMENT).sent == ["s02"]
        assert_platform_holds_the_export(platform, course)


def test_a_line_item_deleted_or_rescaled_in_the_lms(tmp_path):
    """Deleted in the LMS: the next push makes a new one and sends every score to it. Its maximum changed
    by hand: a note (each score carries its own maximum)."""
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path)
    with platform:
        push(course, ASSIGNMENT)
        set_manual(course, "s03", 1.5)
        platform.lineitems.clear()
        platform.results.clear()
        again = push(course, ASSIGNMENT)
        assert len(again.sent) == 27 and list(platform.lineitems) == [2]
        assert_platform_holds_the_export(platform, course)
        platform.lineitems[2]["scoreMaximum"] = 10
        set_manual(course, "s04", 2.5)
        third = push(course, ASSIGNMENT)
        assert third.sent == ["s04"] and "out of 10, the assignment of 15" in third.notes[0]
        assert platform.held_scores()["s04"][0] == export_scores(course)["s04"][0]


def test_without_the_results_scope_an_unconfirmed_score_is_sent_again(tmp_path):
    from course_tools.lms.ledger import Ledger
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path)
    platform.withheld_scopes = {"https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"}
    with platform:
        push(course, ASSIGNMENT)
        with Ledger(course.db_url) as ledger:   # as if the answer to s06's post had never come
            ledger.put_score(ASSIGNMENT, "s06", state="sending")
        again = push(course, ASSIGNMENT)
        assert again.sent == ["s06"] and "result.readonly" in again.notes[0]


def test_a_score_the_lms_refuses_is_recorded_and_tried_again_next_time(tmp_path):
    """The platform refuses a post for a user it does not know (400): the ledger keeps the refusal with the
    answer, the others are sent, and the next push tries that one again (the LMS holds nothing of it)."""
    from course_tools.lms.ledger import Ledger
    from course_tools.lms.push import push

    platform, course = synced_class(tmp_path)
    with platform:
        platform.members = [m for m in platform.members if m["user_id"] != "s09"]   # unknown to the LMS now
        first = push(course, ASSIGNMENT)
        assert [s for s, _ in first.refused] == ["s09"] and "HTTP 400" in first.refused[0][1]
        assert len(first.sent) == 26
        with Ledger(course.db_url) as ledger:
            row = ledger.scores(ASSIGNMENT)["s09"]
        assert (row["state"], row["answer_status"]) == ("refused", 400) and "not a member" in row["answer"]
        again = push(course, ASSIGNMENT, dry_run=True)
        assert [(p.score.student, p.why) for p in again.planned] == [("s09", "refused last time")]


def test_two_pushes_at_once_never_both_post(tmp_path):
    """A push running (its lock held by a live process on this host) refuses a second; a lock left by a
    process that died (kill -9) is taken over."""
    import socket

    from course_tools.lms.ledger import Ledger, pushes
    from course_tools.lms.push import push
    from course_tools.lms.registration import LmsError

    platform, course = synced_class(tmp_path)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with platform, Ledger(course.db_url) as ledger:
            from course_tools.gradebook_tables import utcnow

            with ledger.engine.begin() as conn:
                conn.execute(pushes.insert().values(assignment=ASSIGNMENT, holder=f"{socket.gethostname()}:{other.pid}",
                                                    since=utcnow()))
            with pytest.raises(LmsError, match=f"another `course lms push {ASSIGNMENT}` is running"):
                push(course, ASSIGNMENT)
            assert not platform.posts
            other.kill()
            other.wait(10)
            assert len(push(course, ASSIGNMENT).sent) == 27   # the dead holder's lock is taken over
            with ledger.engine.begin() as conn:
                assert conn.execute(pushes.select()).first() is None   # and released at the end
    finally:
        other.kill()
