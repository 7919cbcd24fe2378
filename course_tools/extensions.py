"""Extensions: one student's own deadline (and extra graded attempts a day) for an assignment.

The grants live in the course's database (the gradebook's ``db_url``, SQLite or PostgreSQL), in
the table ``course_extensions``. It is an audit trail: every grant and every revocation is a new
row (who granted it, when, why), and no row is ever updated or deleted. What is in force for a
student and an assignment is their latest row; a revocation is a row without a deadline.

`course extend` writes here (grant, revoke); deadlines.deadline_of reads the row in force, and
every part that needs a student's deadline asks deadline_of, never this table.

Times: the table keeps naive UTC, as nbgrader's gradebook does. A date the instructor types
without a time zone is read in the course's zone when nbgrader_config.py sets one
(``c.Course.timezone = "Europe/Berlin"``), and refused otherwise, saying which zone to add.
"""
from __future__ import annotations

import datetime
import getpass
import re
from dataclasses import dataclass

from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, Text, create_engine, select

from .course_dir import Course, CourseError
from .gradebook_tables import create_racing_others, utcnow

metadata = MetaData()
grants = Table(
    "course_extensions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("assignment", String(128), nullable=False),
    Column("student", String(128), nullable=False),
    Column("until", DateTime),                              # the student's deadline, naive UTC; None: revoked
    Column("extra_attempts", Integer, nullable=False, default=0),   # graded attempts a day on top of the policy's
    Column("reason", Text, nullable=False, default=""),
    Column("granted_by", String(128), nullable=False),      # the Unix account that ran `course extend`
    Column("granted_at", DateTime, nullable=False),         # naive UTC
)


@dataclass(frozen=True)
class Grant:
    id: int
    assignment: str
    student: str
    until: datetime.datetime | None
    extra_attempts: int
    reason: str
    granted_by: str
    granted_at: datetime.datetime

    @property
    def revoked(self) -> bool:
        return self.until is None


class Extensions:
    """The course's grants. ``create=False``: opens only a table that exists (see ``of``)."""

    def __init__(self, db_url: str, create: bool = True):
        self.engine = create_engine(db_url, pool_pre_ping=not db_url.startswith("sqlite"))
        if create:
            create_racing_others(lambda: metadata.create_all(self.engine, checkfirst=True))

    @classmethod
    def of(cls, course: Course, create: bool = False) -> "Extensions | None":
        """The course's grants; None when nothing was ever granted (and ``create`` is False):
        nothing is created by reading."""
        from sqlalchemy import inspect

        if not create and course.db_url.startswith("sqlite:///") and not course.gradebook_exists():
            return None
        store = cls(course.db_url, create=create)
        if create or inspect(store.engine).has_table(grants.name):
            return store
        store.close()
        return None

    def close(self) -> None:
        self.engine.dispose()

    def add(self, rows: list[dict]) -> None:
        """Add grants or revocations (dicts of assignment, student, until, extra_attempts, reason)
        in one transaction: all of them or none."""
        who, now = _unix_user(), utcnow()
        with self.engine.begin() as conn:
            for row in rows:
                conn.execute(grants.insert().values(granted_by=who, granted_at=now, **row))

    def history(self, assignment: str | None = None, student: str | None = None) -> list[Grant]:
        """Every row, oldest first."""
        query = select(grants).order_by(grants.c.id)
        if assignment is not None:
            query = query.where(grants.c.assignment == assignment)
        if student is not None:
            query = query.where(grants.c.student == student)
        with self.engine.begin() as conn:
            return [Grant(**record._mapping) for record in conn.execute(query)]

    def latest(self, assignment: str | None = None) -> dict[tuple[str, str], Grant]:
        """The latest row per (assignment, student)."""
        return {(g.assignment, g.student): g for g in self.history(assignment)}

    def in_force(self, assignment: str | None = None) -> list[Grant]:
        """The grants in force (latest rows that are not revocations), by assignment and student."""
        return sorted((g for g in self.latest(assignment).values() if not g.revoked),
                      key=lambda g: (g.assignment, g.student))


def grant_in_force(course: Course, assignment: str, student: str) -> Grant | None:
    """The grant in force for ``student`` on ``assignment``, None when there is none."""
    store = Extensions.of(course)
    if store is None:
        return None
    try:
        rows = store.history(assignment, student)
    finally:
        store.close()
    return rows[-1] if rows and not rows[-1].revoked else None


def _unix_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        import os

        return str(os.geteuid())


# ---------------------------------------------------------------------------------- reading times
def course_zone(course: Course):
    """The course's time zone (``c.Course.timezone``), None when it sets none."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = course._setting("Course", "timezone", None)
    if not name:
        return None
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise CourseError(f"{course.root}/nbgrader_config.py: c.Course.timezone {name!r} is not a time zone "
                          f"name such as 'Europe/Berlin' or 'UTC'") from None


def parse_when(text: str, zone=None) -> datetime.datetime:
    """A date and time as naive UTC: '2027-03-29 13:00 UTC', '2027-03-29 13:00 Europe/Berlin',
    '2027-03-29T13:00+02:00'; without a zone, read in ``zone`` (the course's), refused without one."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    import dateutil.parser

    example = "'2027-03-29 13:00 UTC' or '2027-03-29 13:00 Europe/Berlin'"
    words = text.strip().rsplit(" ", 1)
    named = None
    if len(words) == 2 and re.fullmatch(r"[A-Za-z][A-Za-z0-9_+\-/]*", words[1]):
        try:
            named = ZoneInfo("UTC" if words[1].upper() in ("UTC", "Z", "GMT") else words[1])
            text = words[0]
        except (ZoneInfoNotFoundError, ValueError):
            if "/" in words[1]:
                raise CourseError(f"unknown time zone {words[1]!r} in {' '.join(words)!r}; write it like "
                                  f"{example}") from None
    try:
        when = dateutil.parser.isoparse(text.strip()) if "T" in text else dateutil.parser.parse(text.strip())
    except (ValueError, OverflowError) as err:
        raise CourseError(f"cannot read the date {text!r} ({err}); write it like {example}") from None
    if when.tzinfo is not None and named is not None:
        raise CourseError(f"the date {text!r} has two time zones; give one, like {example}")
    if when.tzinfo is None:
        if named is None and zone is None:
            raise CourseError(f"the date {text!r} has no time zone: add one, like {example} (or set the "
                              f"course's zone in nbgrader_config.py: c.Course.timezone = 'Europe/Berlin')")
        when = when.replace(tzinfo=named or zone)
    return when.astimezone(datetime.timezone.utc).replace(tzinfo=None)


DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)w)?(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?")


def parse_by(text: str) -> datetime.timedelta | float:
    """A duration ('3d', '36h', '1d12h', '90m', '1w'), or a share of the assignment's time as a
    fraction ('50%' -> 0.5)."""
    compact = text.strip().replace(" ", "").lower()
    share = re.fullmatch(r"(\d+(?:\.\d+)?)%", compact)
    if share:
        return float(share.group(1)) / 100.0
    match = DURATION.fullmatch(compact)
    if not compact or not match or not any(match.groups()):
        raise CourseError(f"cannot read the duration {text!r}: write a number of weeks, days, hours or minutes "
                          f"such as '3d', '36h', '1d12h', '90m', or a share of the time between release and due "
                          f"date such as '50%'")
    weeks, days, hours, minutes = (float(g or 0) for g in match.groups())
    return datetime.timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes)


# ---------------------------------------------------------------------------------- granting
@dataclass(frozen=True)
class Assigned:
    """What the gradebook says of an assignment: its due date and when it was first released."""
    name: str
    due: datetime.datetime | None
    released: datetime.datetime | None


def _assignments(course: Course, wanted: list[str] | None) -> list[Assigned]:
    """The gradebook's assignments named in ``wanted`` (None: every one with a due date), each
    checked: a course assignment, in the gradebook."""
    from course_student.errors import check_assignment

    from . import release_versions

    with course.gradebook() as gradebook:
        dues = {a.name: a.duedate for a in gradebook.assignments}
    if wanted is None:
        wanted = [name for name, due in dues.items() if due is not None]
        if not wanted:
            raise CourseError("no assignment in the gradebook has a due date: release one with --due first")
    found = []
    for name in wanted:
        check_assignment(name)
        if name not in dues:
            raise CourseError(f"{name} is not in the gradebook yet: release it first (course release {name})")
        stored = release_versions.versions(course.root, name)
        released = None
        if stored:
            first = datetime.datetime.fromisoformat(stored[0].manifest["recorded"])
            released = first.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        found.append(Assigned(name, dues[name], released))
    return found


def _students(course: Course, students: list[str]) -> list[str]:
    with course.gradebook() as gradebook:
        known = {s.id for s in gradebook.students}
    unknown = [s for s in students if s not in known]
    if unknown:
        raise CourseError(f"unknown student{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: not "
                          f"in the gradebook (it knows {', '.join(sorted(known)) or 'no student yet'}); add a "
                          f"student with `nbgrader db student add ID` in the course folder")
    return list(dict.fromkeys(students))


def planned_deadline(assigned: Assigned, until: datetime.datetime | None, by) -> datetime.datetime:
    """The deadline a grant gives: ``until`` itself, or the due date plus ``by`` (a timedelta, or a
    share of the time between the first release and the due date)."""
    if until is not None:
        return until
    if assigned.due is None:
        raise CourseError(f"{assigned.name} has no due date, so --by has nothing to add to: give --until, or "
                          f"set its due date (course release {assigned.name} --due ...)")
    if isinstance(by, datetime.timedelta):
        return assigned.due + by
    if assigned.released is None or assigned.released >= assigned.due:
        raise CourseError(f"--by {by * 100:g}% needs the time between the release of {assigned.name} and its due "
                          f"date, and no release before the due date is recorded for it; give a duration "
                          f"(--by 3d) or --until")
    extra = (assigned.due - assigned.released) * by
    return assigned.due + datetime.timedelta(seconds=round(extra.total_seconds()))


def grant(course: Course, assignments: list[str] | None, students: list[str], until: str | None, by: str | None,
          attempts: int = 0, reason: str = "", shorten: bool = False) -> list[dict]:
    """Grant ``students`` an extension on ``assignments`` (None: every assignment with a due date):
    a new deadline ``until`` (a date) or ``by`` (a duration after the due date, or 'N%' of the time
    between release and due date), and ``attempts`` graded attempts a day more. Everything is
    checked before anything is stored; the rows stored are returned."""
    if (until is None) == (by is None):
        raise CourseError("give the new deadline with exactly one of --until WHEN and --by DURATION")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
        raise CourseError(f"--attempts {attempts!r} must be a whole number >= 0 (extra graded attempts a day)")
    moment = parse_when(until, course_zone(course)) if until is not None else None
    amount = parse_by(by) if by is not None else None
    targets = _assignments(course, assignments)
    students = _students(course, students)
    rows = []
    for assigned in targets:
        new = planned_deadline(assigned, moment, amount)
        if assigned.due is not None and new < assigned.due and not shorten:
            raise CourseError(f"the new deadline of {assigned.name}, {new:%Y-%m-%d %H:%M} UTC, is before its due "
                              f"date {assigned.due:%Y-%m-%d %H:%M} UTC: that shortens the time; say --shorten if "
                              f"that is meant")
        rows += [dict(assignment=assigned.name, student=student, until=new, extra_attempts=attempts,
                      reason=reason or "") for student in students]
    store = Extensions.of(course, create=True)
    try:
        store.add(rows)
    finally:
        store.close()
    return rows


def revoke(course: Course, assignments: list[str] | None, students: list[str], reason: str = "") -> list[dict]:
    """Revoke the extensions of ``students`` on ``assignments`` (None: every assignment with a due
    date): a revocation row each, where a grant is in force; the rows stored are returned."""
    targets = _assignments(course, assignments)
    students = _students(course, students)
    store = Extensions.of(course, create=True)
    try:
        latest = store.latest()
        rows = [dict(assignment=a.name, student=s, until=None, extra_attempts=0, reason=reason or "")
                for a in targets for s in students
                if (a.name, s) in latest and not latest[(a.name, s)].revoked]
        if not rows:
            raise CourseError(f"no extension in force for {', '.join(students)} on "
                              f"{', '.join(a.name for a in targets)}: nothing to revoke (course extensions lists "
                              f"the extensions in force)")
        store.add(rows)
    finally:
        store.close()
    return rows
