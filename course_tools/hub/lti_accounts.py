"""Who may have an account after a launch, and the Unix account of a learner who arrives by one.

A learner's launch is let in only when `course lms roster` has made them a student of this course:
their platform id (``sub``) is in the course's LMS roster (the ledger's members, in the gradebook's
database) as an active learner under the same account name. Everyone else the LMS sends is
refused with a page that says why, and nothing is made for them:
  - a learner the roster does not list (added in the LMS after the last sync, or a learner of
    *another* course: an LMS may install one deployment of the tool for a whole institution, so
    the deployment id alone does not say "this course"); the instructor's sync decides who is a
    student, with their name in the gradebook, never a click on a link;
  - a learner the roster marks dropped (inactive).
Instructors and TAs are not looked up: they join the graders' group (lti_login.py) and get no
student account and no gradebook entry.

The Unix account of an admitted learner is made as a roster student's is on a deployed hub
(accounts.create: useradd with the course's marker, a private home of mode 0700), at their first
launch; the name is the roster's account name (accounts.account_name: a safe Unix name, passed to
useradd as one argument, never through a shell). An existing account is used as it is when the
course's tools made it; an account of that name that they did not make (a real user of the
machine) is refused, never taken over.
"""
from __future__ import annotations

import pwd
from pathlib import Path

from . import accounts


class NotAdmitted(Exception):
    """A launch whose user may not have a student account here; the message says why (for the page)."""


def roster_entry(db_url: str, sub: str, name: str) -> dict | None:
    """The LMS roster's row of platform id ``sub`` if it is the account ``name``, else None."""
    from ..lms.ledger import synced_member

    if db_url.startswith("sqlite:///") and not Path(db_url.removeprefix("sqlite:///")).is_file():
        return None   # no gradebook yet: no roster (and the hub, root, must not create the grader's file)
    row = synced_member(db_url, sub)   # reads only: the hub (root) creates nothing in the grader's database
    return row if row is not None and row["student"] == name else None


def admit_learner(db_url: str, sub: str, name: str, unix_accounts: bool) -> None:
    """Let learner ``sub`` (account ``name``) in, making their Unix account if ``unix_accounts``;
    NotAdmitted if they are not an active student on the course's LMS roster."""
    row = roster_entry(db_url, sub, name)
    if row is None or not row["is_student"]:
        raise NotAdmitted("you are not on this course's roster on the hub yet (the course staff adds the LMS's "
                          "students with `course lms roster`; ask them, then start again from the LMS)")
    if not row["active"]:
        raise NotAdmitted("the course's roster marks you as no longer enrolled (if that is wrong, ask the course "
                          "staff to run `course lms roster` again)")
    if unix_accounts:
        ensure_account(name)


def ensure_account(name: str) -> pwd.struct_passwd:
    """The Unix account ``name``: made now (accounts.create) if missing, kept if the course's tools
    made it, NotAdmitted if it belongs to someone else."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return accounts.create([name])[0]
    if not accounts.ours(name):
        raise NotAdmitted(f"an account named {name} exists on the hub's machine and was not made for this course "
                          f"(the course staff must resolve the clash)")
    return entry


def course_paths(course_root: Path) -> tuple[str, Path, str]:
    """(db_url, exchange, course id) of the course folder."""
    from ..course_dir import Course

    course = Course(Path(course_root))
    return course.db_url, course.exchange, course.course_id
