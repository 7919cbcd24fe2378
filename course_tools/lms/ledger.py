"""What the course knows of the LMS, in the course's database (the gradebook's ``db_url``, SQLite
or PostgreSQL), beside nbgrader's tables as course_tools/extensions.py keeps its own:

    course_lms_members    one row per platform member: their platform id, the account name (the
                          gradebook's student id), roles, names, and whether they are still in the
                          course (a drop is ``active = False``: nbgrader's students have no such
                          field, and a student is never deleted with their grades)
    course_lms_lineitems  the platform's line item of each assignment (its id is a URL)
    course_lms_scores     per assignment and student, the score last sent and the platform's answer:
                          ``state`` is "sending" from just before the post until the answer is stored
                          (so a push killed in between leaves "sending": the next one asks the platform's
                          results before posting again), then "sent" or "refused".
    course_lms_progress   per assignment and student, the progress the grading service last posted
                          (progress.py: "Submitted" and "Pending" or "PendingManual", never a score),
                          with the same states and answer columns as course_lms_scores
    course_lms_pushes     who posts to an assignment's line item now (``holder``: host and process id;
                          "progress " before it for the grading service's progress posts), so that
                          two at once never post for the same students: a second push is refused; a
                          push waits for a progress post (one at most, seconds); a progress post that
                          finds the lock held tries again later. A holder that died (its process
                          gone on this host, or older than STALE elsewhere) is replaced.
"""
from __future__ import annotations

import contextlib
import datetime
import os
import socket
import time

from sqlalchemy import (Boolean, Column, DateTime, Float, Integer, MetaData, String, Table, Text, UniqueConstraint,
                        create_engine, inspect, select)
from sqlalchemy.exc import IntegrityError

from ..gradebook_tables import create_racing_others, utcnow
from .registration import LmsError

STALE = datetime.timedelta(hours=1)
PROGRESS = "progress "   # the start of a progress poster's holder name

metadata = MetaData()
members = Table(
    "course_lms_members", metadata,
    Column("user_id", String(255), primary_key=True),       # the platform's id (sub / user_id)
    Column("student", String(128), nullable=False, unique=True),  # the account name: gradebook student id
    Column("is_student", Boolean, nullable=False),
    Column("active", Boolean, nullable=False),
    Column("roles", Text, nullable=False, default=""),       # the platform's roles, space-separated
    Column("given_name", Text, nullable=False, default=""),
    Column("family_name", Text, nullable=False, default=""),
    Column("email", Text, nullable=False, default=""),
    Column("synced_at", DateTime, nullable=False),            # naive UTC: the last sync that changed the row
)
lineitems = Table(
    "course_lms_lineitems", metadata,
    Column("assignment", String(128), primary_key=True),
    Column("lineitem", Text, nullable=False),                 # its id: a URL on the platform
    Column("score_maximum", Float, nullable=False),
    Column("recorded_at", DateTime, nullable=False),
)
scores = Table(
    "course_lms_scores", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("assignment", String(128), nullable=False),
    Column("student", String(128), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("lineitem", Text, nullable=False),
    Column("payload", Text, nullable=False),                  # what decides a resend: score, maximum, progress, comment
    Column("timestamp", String(64), nullable=False),          # the score's timestamp as posted
    Column("state", String(16), nullable=False),              # sending | sent | refused
    Column("answer_status", Integer),                         # the platform's HTTP status (None: unanswered)
    Column("answer", Text, nullable=False, default=""),      # the start of its answer, or how it was confirmed
    Column("updated_at", DateTime, nullable=False),
    UniqueConstraint("assignment", "student", name="course_lms_scores_one_per_student"),
)
progress = Table(
    "course_lms_progress", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("assignment", String(128), nullable=False),
    Column("student", String(128), nullable=False),
    Column("user_id", String(255), nullable=False),
    Column("lineitem", Text, nullable=False),
    Column("payload", Text, nullable=False),                  # activityProgress and gradingProgress, as JSON
    Column("timestamp", String(64), nullable=False),
    Column("state", String(16), nullable=False),              # sending | sent | refused
    Column("answer_status", Integer),
    Column("answer", Text, nullable=False, default=""),
    Column("updated_at", DateTime, nullable=False),
    UniqueConstraint("assignment", "student", name="course_lms_progress_one_per_student"),
)
pushes = Table(
    "course_lms_pushes", metadata,
    Column("assignment", String(128), primary_key=True),
    Column("holder", String(300), nullable=False),            # host:pid of the running push
    Column("since", DateTime, nullable=False),
)


def _gone(holder: str, since: datetime.datetime) -> bool:
    """Whether the push or progress poster ``holder`` is no longer running."""
    host, _, pid = holder.removeprefix(PROGRESS).rpartition(":")
    if host != socket.gethostname():
        return utcnow() - since > STALE
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


def synced_member(db_url: str, user_id: str) -> dict | None:
    """The roster's row of platform id ``user_id``, read without writing anything: None when no
    roster sync has made the ledger's tables yet. For readers that are not the grader (the hub runs
    as root and must not create tables, or a journal owned by root, in the grader's SQLite file)."""
    engine = create_engine(db_url, pool_pre_ping=not db_url.startswith("sqlite"))
    try:
        if not inspect(engine).has_table(members.name):
            return None
        with engine.connect() as conn:
            row = conn.execute(select(members).where(members.c.user_id == user_id)).first()
        return dict(row._mapping) if row is not None else None
    finally:
        engine.dispose()


class Ledger:
    def __init__(self, db_url: str):
        self.engine = create_engine(db_url, pool_pre_ping=not db_url.startswith("sqlite"))
        create_racing_others(lambda: metadata.create_all(self.engine, checkfirst=True))

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ members
    def members(self) -> dict[str, dict]:
        with self.engine.begin() as conn:
            return {row.user_id: dict(row._mapping) for row in conn.execute(select(members))}

    def put_members(self, rows: list[dict]) -> None:
        """Insert or update members (by platform id), in one transaction."""
        with self.engine.begin() as conn:
            for row in rows:
                done = conn.execute(members.update().where(members.c.user_id == row["user_id"])
                                    .values(synced_at=utcnow(), **row))
                if not done.rowcount:
                    conn.execute(members.insert().values(synced_at=utcnow(), **row))

    # ------------------------------------------------------------------ line items
    def lineitem(self, assignment: str) -> dict | None:
        with self.engine.begin() as conn:
            row = conn.execute(select(lineitems).where(lineitems.c.assignment == assignment)).first()
        return dict(row._mapping) if row else None

    def put_lineitem(self, assignment: str, lineitem: str, score_maximum: float) -> None:
        with self.engine.begin() as conn:
            conn.execute(lineitems.delete().where(lineitems.c.assignment == assignment))
            conn.execute(lineitems.insert().values(assignment=assignment, lineitem=lineitem,
                                                   score_maximum=score_maximum, recorded_at=utcnow()))

    # ------------------------------------------------------------------ one poster at a time
    @contextlib.contextmanager
    def pushing(self, assignment: str, for_progress: bool = False, wait: float = 0.0):
        """Hold the assignment's lock while the block runs. LmsError if another holds it: at once when
        that is a push (or this is a progress post), after ``wait`` seconds when it is the grading
        service posting one student's progress (it holds the lock for one post)."""
        mine = f"{PROGRESS if for_progress else ''}{socket.gethostname()}:{os.getpid()}"
        until = time.monotonic() + wait
        while True:
            other = self._take(assignment, mine)
            if other is None:
                break
            if for_progress or not other.holder.startswith(PROGRESS) or time.monotonic() >= until:
                what = (f"the grading service is posting progress of {assignment}"
                        if other.holder.startswith(PROGRESS) else f"another `course lms push {assignment}` is running")
                raise LmsError(f"{what} ({other.holder}, since {other.since:%Y-%m-%d %H:%M} UTC): wait for it to end")
            time.sleep(0.1)
        try:
            yield
        finally:
            with self.engine.begin() as conn:
                conn.execute(pushes.delete().where((pushes.c.assignment == assignment) & (pushes.c.holder == mine)))

    def _take(self, assignment: str, mine: str):
        """Take the lock for ``mine``; None when taken, else the live holder's row."""
        with self.engine.begin() as conn:
            try:
                with conn.begin_nested():
                    conn.execute(pushes.insert().values(assignment=assignment, holder=mine, since=utcnow()))
                return None
            except IntegrityError:
                row = conn.execute(select(pushes).where(pushes.c.assignment == assignment)).first()
                if row is not None and not _gone(row.holder, row.since):
                    return row
                conn.execute(pushes.delete().where(pushes.c.assignment == assignment))
                conn.execute(pushes.insert().values(assignment=assignment, holder=mine, since=utcnow()))
                return None

    # ------------------------------------------------------------------ scores and progress
    def scores(self, assignment: str, table: Table | None = None) -> dict[str, dict]:
        """{student: row} of ``assignment`` in ``table`` (default: the pushes' scores; or progress)."""
        table = scores if table is None else table
        with self.engine.begin() as conn:
            rows = conn.execute(select(table).where(table.c.assignment == assignment))
            return {row.student: dict(row._mapping) for row in rows}

    def progress(self, assignment: str) -> dict[str, dict]:
        return self.scores(assignment, progress)

    def put_score(self, assignment: str, student: str, table: Table | None = None, **values) -> None:
        """Insert or update the row of (assignment, student), committed before this returns."""
        self.put_scores(assignment, {student: values}, table)

    def put_scores(self, assignment: str, rows: dict[str, dict], table: Table | None = None) -> None:
        """put_score for several students ({student: values}) in one transaction."""
        table = scores if table is None else table
        with self.engine.begin() as conn:
            for student, values in rows.items():
                where = (table.c.assignment == assignment) & (table.c.student == student)
                done = conn.execute(table.update().where(where).values(updated_at=utcnow(), **values))
                if not done.rowcount:
                    conn.execute(table.insert().values(assignment=assignment, student=student,
                                                       updated_at=utcnow(), **values))
