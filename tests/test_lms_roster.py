"""`course lms roster` (course_tools/lms/roster.py) against the loopback LTI platform
(tests/lms_platform.py): 30 members over paged membership containers become gradebook students
(learners only, with their names), an unsafe platform id is mapped, a second sync changes nothing,
and a dropped student is marked inactive with their grades kept."""
from __future__ import annotations

import pytest
from lms_class import ASSIGNMENT, UUID, grade_class, platform_and_course

pytest.importorskip("pylti1p3")
pytest.importorskip("lti1p3platform")


def _students(course) -> dict[str, tuple]:
    with course.gradebook() as gradebook:
        return {s.id: (s.first_name, s.last_name, s.email) for s in gradebook.students}


def test_thirty_members_over_pages_become_students_and_a_second_sync_changes_nothing(tmp_path):
    from course_tools.lms.accounts import account_name
    from course_tools.lms.ledger import Ledger
    from course_tools.lms.roster import sync

    platform, course = platform_and_course(tmp_path, page_size=7)   # 30 members: 5 pages
    with platform:
        first = sync(course)
        assert [p for m, p in platform.requests if p == "/memberships"] == ["/memberships"] * 5
        students = _students(course)
        mapped, was_mapped = account_name("https://lms.example.edu", UUID)
        assert was_mapped and mapped.startswith("lti-") and len(mapped) == 16
        assert set(students) == {"zoe", mapped, *(f"s{n:02d}" for n in range(1, 26))}   # 27: not prof, ta, gone
        assert students["zoe"] == ("Zoë", "Ñúñez-Øster", "zoe@example.edu")
        assert students[mapped] == ("Uma", "Uuid", "uma@example.edu")
        assert sorted(first.staff) == ["prof", "ta-lee"] and len(first.added) == 30
        assert first.mapped == [(UUID, mapped, "36 characters (at most 31)")] and not first.refused
        with Ledger(course.db_url) as ledger:
            rows = ledger.members()
        assert rows["gone"]["active"] is False and rows["prof"]["is_student"] is False
        assert platform.token_scopes == [["https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]]

        second = sync(course)
        assert (second.added, second.updated, second.dropped, second.unchanged) == ([], [], [], 30)
        assert _students(course) == students


def test_a_student_who_drops_is_inactive_and_keeps_the_grades(tmp_path):
    from course_tools.lms.ledger import Ledger
    from course_tools.lms.push import push
    from course_tools.lms.roster import sync

    platform, course = platform_and_course(tmp_path)
    with platform:
        sync(course)
        grade_class(course)
        platform.members = [m for m in platform.members if m["user_id"] != "s07"]   # s07 leaves the course
        platform.members[3] = {**platform.members[3], "email": "zoe.new@example.edu"}   # zoe's address changes
        again = sync(course)
        assert again.dropped == ["s07"] and again.updated == ["zoe"] and again.unchanged == 28
        with Ledger(course.db_url) as ledger:
            assert ledger.members()["s07"]["active"] is False
        with course.gradebook() as gradebook:
            assert gradebook.find_submission(ASSIGNMENT, "s07").score > 0   # kept, with the grades
            assert gradebook.find_student("zoe").email == "zoe.new@example.edu"
        outcome = push(course, ASSIGNMENT)
        assert ("s07", "dropped: inactive in the LMS") in outcome.skipped and "s07" not in outcome.sent


def test_account_names_keep_safe_ids_and_map_the_rest():
    from course_tools.lms.accounts import account_name

    assert account_name("iss", "ada_l") == ("ada_l", False)
    for unsafe in ("42", "root", "Ada", "ada@example.edu", "zoë", "a" * 40, "lti-abc", "../x", "a b"):
        name, mapped = account_name("iss", unsafe)
        assert mapped and name.startswith("lti-") and name == account_name("iss", unsafe)[0], unsafe
    assert account_name("iss-a", "42") != account_name("iss-b", "42")   # per platform


def test_dry_run_changes_nothing(tmp_path):
    from course_tools.lms.roster import sync

    platform, course = platform_and_course(tmp_path)
    with platform:
        outcome = sync(course, dry_run=True)
        assert len(outcome.added) == 30
        assert _students(course) == {}


def test_the_hubs_roster_lookup_writes_nothing_into_the_graders_database(tmp_path):
    """The hub runs as root: looking a launch up in a gradebook that no sync has touched must not
    create the LMS tables (or a root-owned journal) in the grader's SQLite file; after a sync the
    same lookup finds the learner."""
    import os
    import sqlite3

    from course_tools.hub.lti_accounts import roster_entry
    from course_tools.lms.roster import sync

    platform, course = platform_and_course(tmp_path, page_size=7)
    db_file = course.db_url.removeprefix("sqlite:///")
    with sqlite3.connect(db_file) as conn:   # a gradebook that exists, with none of the LMS's tables
        conn.execute("create table other (id integer primary key)")

    def tables() -> set[str]:
        with sqlite3.connect(db_file) as conn:
            return {name for (name,) in conn.execute("select name from sqlite_master where type='table'")}

    before, mtime = tables(), os.stat(db_file).st_mtime_ns
    assert roster_entry(course.db_url, "zoe-sub", "zoe") is None
    assert tables() == before and os.stat(db_file).st_mtime_ns == mtime
    os.remove(db_file)   # the sync makes the real gradebook
    with platform:
        sync(course)
    with sqlite3.connect(db_file) as conn:
        sub = conn.execute("select user_id from course_lms_members where student = 'zoe'").fetchone()[0]
    assert roster_entry(course.db_url, sub, "zoe")["student"] == "zoe"
    assert roster_entry(course.db_url, sub, "someone-else") is None
