"""The grading queue: one row per submission, in the course's own database.

The table lives beside nbgrader's in the gradebook's ``db_url`` (SQLite or PostgreSQL), so it
survives a restart and is shared by every service process of the course. A row goes

    queued -> grading -> done | grading_error

``enqueue`` is idempotent (the inbound folder's name is unique). ``claim`` hands a queued row to
exactly one process, students in turn (the one whose latest claim is oldest first, so one
student's backlog never holds a classmate back): ``SELECT ... FOR UPDATE SKIP LOCKED`` on
PostgreSQL (two services never wait on, nor take, each other's row), an immediate
(write-locking) transaction on SQLite; and never a row whose notebook (fingerprint) is being
graded at that moment, so identical content is graded once even by parallel workers (the row
waits, then finds the stored result). A claimed row carries who claimed it and a lease, which
the service's heartbeat (heartbeat.py; hosts.py keeps each host's, for `course status`) renews
every quarter of COURSE_SERVICE_LEASE_SECONDS while the grading may still run, never past the
grading's own time limit and slack; ``reclaim`` puts back rows whose claimant died (kill -9: a
process of this machine that no longer runs, or whose pid now names a process that started
later) or whose lease ran out (whoever holds it, on any machine: a dead host's rows wait one
lease), so nothing is lost. ``retry`` puts back a row whose grading failed, not to be claimed
before a back-off (a queued row's ``lease_until``).

``take_attempt`` decides the daily attempt limit in one transaction (the count of the student's
graded attempts and the marking of this one), so two submissions of one student graded at once
by two workers, or two services, cannot both take the last attempt.
"""
from __future__ import annotations

import datetime
import heapq
import json
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import (Boolean, Column, DateTime, Integer, MetaData, String, Table, Text, UniqueConstraint,
                        create_engine, event, func, select, update)
from sqlalchemy.exc import IntegrityError

from ..gradebook_tables import create_racing_others, utcnow
from . import hosts
from .claimants import claimant, known_dead  # noqa: F401 - claimant: the name every caller takes from here

QUEUED, GRADING, DONE, GRADING_ERROR = "queued", "grading", "done", "grading_error"
NEVER = datetime.datetime(1970, 1, 1)   # the latest claim of a student never claimed: first in turn

metadata = MetaData()
submissions = Table(
    "course_grading_queue", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("assignment", String(128), nullable=False),
    Column("student", String(128), nullable=False),
    Column("folder", String(512), nullable=False),          # the inbound folder's name
    Column("submitted_at", DateTime, nullable=False),       # inbound.py's recorded time (naive UTC)
    Column("fingerprint", String(64)),                      # results.py's key of its notebook (None: unreadable)
    Column("feedback_names", Text, nullable=False),         # JSON {notebook id: nbgrader's notebook_hash}
    Column("state", String(16), nullable=False, default=QUEUED),
    Column("outcome", String(32)),                          # graded | reused | over_limit | closed | hidden |
                                                            # timed_out_before | refused | held; timed_out (an error)
    Column("counted", Boolean, nullable=False, default=False),   # a graded attempt (the daily limit)
    Column("attempts", Integer, nullable=False, default=0),      # times claimed
    Column("gradings", Integer, nullable=False, default=0),      # hidden-suite gradings that finished
    Column("claimed_by", String(255)),
    Column("lease_until", DateTime),                        # grading: the lease; queued: not before (a retry)
    Column("enqueued_at", DateTime, nullable=False),
    Column("started_at", DateTime),
    Column("finished_at", DateTime),
    Column("scores", Text),                                 # JSON {task: [score, points]}
    Column("error", Text),
    UniqueConstraint("folder", name="course_grading_queue_folder"),
)


@dataclass
class Row:
    id: int
    assignment: str
    student: str
    folder: str
    submitted_at: datetime.datetime
    fingerprint: str | None
    feedback_names: dict
    state: str
    attempts: int

    @classmethod
    def of(cls, record) -> "Row":
        m = record._mapping
        return cls(m["id"], m["assignment"], m["student"], m["folder"], m["submitted_at"], m["fingerprint"],
                   json.loads(m["feedback_names"]), m["state"], m["attempts"])


def _in_claim_order(rows: list[Row], last: dict) -> list[Row]:
    """``rows`` (queued and grading, by id): the grading ones, then the queued ones in the order
    ``claim`` takes them; ``last``: {student: their latest claim}."""
    queued: dict[str, list[Row]] = {}
    for row in rows:
        if row.state == QUEUED:
            queued.setdefault(row.student, []).append(row)
    # A heap of (the student's latest claim, their oldest queued row's id, student): claim's
    # order, in O(n log n) for n queued rows (ids are unique: students are never compared).
    turns = [(last.get(student) or NEVER, mine[0].id, student) for student, mine in queued.items()]
    heapq.heapify(turns)
    order = [row for row in rows if row.state == GRADING]
    step = max([utcnow(), *[t for t, _, _ in turns]])
    nexts = {student: 0 for student in queued}
    while turns:
        _, _, student = heapq.heappop(turns)
        mine = queued[student]
        order.append(mine[nexts[student]])
        nexts[student] += 1
        step += datetime.timedelta(microseconds=1)   # claimed now: behind every other student
        if nexts[student] < len(mine):
            heapq.heappush(turns, (step, mine[nexts[student]].id, student))
    return order


def _engine(db_url: str):
    if not db_url.startswith("sqlite"):
        return create_engine(db_url, pool_pre_ping=True)
    engine = create_engine(db_url, connect_args={"timeout": 60, "check_same_thread": False})

    # pysqlite's own transaction handling would begin lazily, without a write lock; the queue
    # needs BEGIN IMMEDIATE, so that a claim's read and update happen under one lock.
    @event.listens_for(engine, "connect")
    def _no_driver_transactions(connection, _record):
        connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _immediate(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


class Queue:
    def __init__(self, db_url: str, create: bool = True):
        self.engine = _engine(db_url)
        self.postgres = self.engine.dialect.name == "postgresql"
        if create:
            create_racing_others(lambda: metadata.create_all(self.engine, checkfirst=True))
            create_racing_others(lambda: hosts.metadata.create_all(self.engine, checkfirst=True))

    @classmethod
    def existing(cls, db_url: str) -> "Queue | None":
        """The queue of a course whose service has run, else None (nothing is created)."""
        from sqlalchemy import inspect

        queue = cls(db_url, create=False)
        if inspect(queue.engine).has_table(submissions.name):
            return queue
        queue.close()
        return None

    def close(self) -> None:
        self.engine.dispose()

    @classmethod
    def rows_if_served(cls, db_url: str, assignment: str | None = None) -> list[dict] | None:
        """The rows of a course whose service has run (as ``rows``), else None; for status and report."""
        queue = cls.existing(db_url)
        if queue is None:
            return None
        try:
            return queue.rows(assignment)
        finally:
            queue.close()

    # ------------------------------------------------------------------ in
    def known_folders(self, assignment: str) -> set[str]:
        with self.engine.begin() as conn:
            return set(conn.execute(select(submissions.c.folder).where(submissions.c.assignment == assignment))
                       .scalars())

    def queued_folders(self, assignment: str) -> set[str]:
        with self.engine.begin() as conn:
            return set(conn.execute(select(submissions.c.folder).where(
                submissions.c.assignment == assignment, submissions.c.state == QUEUED)).scalars())

    def hold(self, folder: str, seconds: float) -> bool:
        """Keep the queued row of ``folder`` from being claimed for ``seconds`` (0: release it);
        False when it is not queued (claimed meanwhile, or done)."""
        until = utcnow() + datetime.timedelta(seconds=seconds) if seconds else None
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(submissions.c.folder == folder,
                                                          submissions.c.state == QUEUED)
                                .values(lease_until=until)).rowcount == 1

    def retaken(self, folder: str, submitted_at: datetime.datetime, fingerprint: str | None,
                feedback_names: dict) -> bool:
        """A queued folder read again (it changed after it was taken): its new time, key and names."""
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(submissions.c.folder == folder,
                                                          submissions.c.state == QUEUED).values(
                submitted_at=submitted_at, fingerprint=fingerprint,
                feedback_names=json.dumps(feedback_names))).rowcount == 1

    def enqueue(self, assignment: str, student: str, folder: str, submitted_at: datetime.datetime,
                fingerprint: str | None, feedback_names: dict, state: str = QUEUED,
                error: str | None = None, outcome: str | None = None) -> int | None:
        """Add a submission; None when its folder is queued already (by this or another process).
        ``state`` GRADING_ERROR with an ``error``: a folder the intake could not take in; DONE with
        the outcome "refused": a folder that is no submission (the error says why); both closed at once."""
        now = utcnow()
        try:
            with self.engine.begin() as conn:
                result = conn.execute(submissions.insert().values(
                    assignment=assignment, student=student, folder=folder, submitted_at=submitted_at,
                    fingerprint=fingerprint, feedback_names=json.dumps(feedback_names), state=state,
                    counted=False, attempts=0, gradings=0, enqueued_at=now, error=error, outcome=outcome,
                    finished_at=None if state == QUEUED else now))
                return result.inserted_primary_key[0]
        except IntegrityError:
            return None

    # ------------------------------------------------------------------ claim
    def claim(self, me: str, lease_seconds) -> Row | None:
        """A queued row, now ours for ``lease_seconds(row)`` seconds; None if none is queued.

        Fair across students: the row of the student whose latest claim is oldest (a student
        never claimed first), and that student's oldest row. So the students take turns, and one
        student's backlog delays a classmate's submission by at most the gradings under way."""
        with self.engine.begin() as conn:
            # Not a notebook being graded right now (identical content is graded once: the row
            # waits, then finds the stored result).
            in_flight = select(submissions.c.fingerprint).where(submissions.c.state == GRADING,
                                                               submissions.c.fingerprint.is_not(None))
            earlier = submissions.alias("earlier")
            turns = select(earlier.c.student, func.max(earlier.c.started_at).label("last")).group_by(
                earlier.c.student).subquery("turns")
            now = utcnow()
            query = select(submissions).outerjoin(turns, turns.c.student == submissions.c.student).where(
                submissions.c.state == QUEUED,
                submissions.c.lease_until.is_(None) | (submissions.c.lease_until <= now),
                submissions.c.fingerprint.is_(None) | submissions.c.fingerprint.not_in(in_flight.scalar_subquery())
            ).order_by(func.coalesce(turns.c.last, NEVER), submissions.c.id).limit(1)
            if self.postgres:
                query = query.with_for_update(skip_locked=True, of=submissions)
            record = conn.execute(query).first()
            if record is None:
                return None
            row = Row.of(record)
            conn.execute(update(submissions).where(submissions.c.id == row.id).values(
                state=GRADING, claimed_by=me, attempts=submissions.c.attempts + 1, started_at=now,
                lease_until=now + datetime.timedelta(seconds=lease_seconds(row))))
            row.state, row.attempts = GRADING, row.attempts + 1
            return row

    def reclaim(self, me: str) -> int:
        """Put back rows whose claimant died or whose lease ran out; returns how many (and counts
        them, per claimant, in the hosts table: `course status` says what a dead host left)."""
        now = utcnow()
        with self.engine.begin() as conn:
            query = select(submissions.c.id, submissions.c.claimed_by, submissions.c.lease_until).where(
                submissions.c.state == GRADING)
            # The lease decides for every claimant, on any host (a live one renews it while its
            # grading may still run: heartbeat.py); a claimant known dead is not waited for.
            back = {row_id: claimed_by for row_id, claimed_by, lease_until in conn.execute(query)
                    if known_dead(claimed_by or "", me) or (lease_until is not None and lease_until < now)}
            if back:
                conn.execute(update(submissions).where(submissions.c.id.in_(back), submissions.c.state == GRADING)
                             .values(state=QUEUED, claimed_by=None, lease_until=None))
                hosts.count_reclaimed(conn, Counter(c for c in back.values() if c))
        return len(back)

    # ------------------------------------------------------------------ out
    def finish(self, row: Row, me: str, state: str, outcome: str | None, *, counted: bool = False,
               scores: dict | None = None, error: str | None = None) -> bool:
        """Close a row we hold; False when it is no longer ours (reclaimed meanwhile: nothing written)."""
        values = dict(state=state, outcome=outcome, counted=counted, finished_at=utcnow(), lease_until=None,
                      error=error)
        if scores is not None:
            values["scores"] = json.dumps(scores)
        with self.engine.begin() as conn:
            done = conn.execute(update(submissions).where(submissions.c.id == row.id, submissions.c.claimed_by == me,
                                                          submissions.c.state == GRADING).values(**values))
            return done.rowcount == 1

    def retry(self, row: Row, me: str, error: str, after_seconds: float) -> bool:
        """Put a row we hold back in the queue after a failed grading (``error``: why, kept until a
        later try succeeds), claimable again in ``after_seconds``; False when it is no longer ours."""
        with self.engine.begin() as conn:
            back = conn.execute(update(submissions).where(
                submissions.c.id == row.id, submissions.c.claimed_by == me, submissions.c.state == GRADING).values(
                state=QUEUED, claimed_by=None, error=error,
                lease_until=utcnow() + datetime.timedelta(seconds=after_seconds)))
            return back.rowcount == 1

    def record_grading(self, row: Row, me: str, scores: dict) -> bool:
        """A hidden-suite grading of ``row`` finished (its result is stored): counted before anything
        is published, so a grading that a restart finds stored is never counted, nor run, again; False
        (nothing counted) when the row is no longer ours (taken back: the taker finds the result)."""
        with self.engine.begin() as conn:
            return conn.execute(update(submissions).where(
                submissions.c.id == row.id, submissions.c.claimed_by == me, submissions.c.state == GRADING).values(
                gradings=submissions.c.gradings + 1, scores=json.dumps(scores))).rowcount == 1

    def attempts_used(self, row: Row) -> int:
        """The graded attempts counted for ``row``'s student and assignment on its (UTC) submission
        day, ``row`` itself included when it was counted."""
        start = datetime.datetime.combine(row.submitted_at.date(), datetime.time())
        with self.engine.begin() as conn:
            return conn.execute(select(func.count()).select_from(submissions).where(
                submissions.c.assignment == row.assignment, submissions.c.student == row.student,
                submissions.c.counted.is_(True), submissions.c.submitted_at >= start,
                submissions.c.submitted_at < start + datetime.timedelta(days=1))).scalar_one()

    def take_attempt(self, row: Row, per_day: int) -> bool:
        """Count ``row`` as one of its student's graded attempts at its assignment on its (UTC)
        submission day, if fewer than ``per_day`` are counted already; whether it was.

        One transaction decides: on SQLite it holds the write lock from its start (BEGIN
        IMMEDIATE); on PostgreSQL it first locks every row of that student and assignment, so a
        second decision for the same student waits for this one and then counts it."""
        start = datetime.datetime.combine(row.submitted_at.date(), datetime.time())
        same = (submissions.c.assignment == row.assignment) & (submissions.c.student == row.student)
        with self.engine.begin() as conn:
            if self.postgres:
                conn.execute(select(submissions.c.id).where(same).with_for_update()).all()
            used = conn.execute(select(func.count()).select_from(submissions).where(
                same, submissions.c.counted.is_(True), submissions.c.id != row.id,
                submissions.c.submitted_at >= start,
                submissions.c.submitted_at < start + datetime.timedelta(days=1))).scalar_one()
            if used >= per_day:
                return False
            conn.execute(update(submissions).where(submissions.c.id == row.id).values(counted=True))
            return True

    # ------------------------------------------------------------------ questions

    def feedback_owner(self, name: str, besides: int) -> str | None:
        """The student of another row whose feedback has the file name ``name``, if any."""
        with self.engine.begin() as conn:
            for student, names in conn.execute(select(submissions.c.student, submissions.c.feedback_names)
                                               .where(submissions.c.id != besides)):
                if name in json.loads(names).values():
                    return student
        return None

    def timed_out_before(self, fingerprint: str, besides: int) -> bool:
        """Whether another row of the same notebook (fingerprint) ended killed at its time limit."""
        with self.engine.begin() as conn:
            return conn.execute(select(submissions.c.id).where(
                submissions.c.fingerprint == fingerprint, submissions.c.id != besides,
                submissions.c.outcome == "timed_out").limit(1)).first() is not None

    def queued_of(self, assignment: str, student: str) -> int:
        """How many of ``student``'s submissions of ``assignment`` wait in the queue."""
        with self.engine.begin() as conn:
            return conn.execute(select(func.count()).select_from(submissions).where(
                submissions.c.assignment == assignment, submissions.c.student == student,
                submissions.c.state == QUEUED)).scalar_one()

    def waiting(self) -> list[Row]:
        """Grading rows, then queued rows in the order ``claim`` takes them (students in turn)."""
        with self.engine.begin() as conn:
            rows = [Row.of(r) for r in conn.execute(select(submissions).where(
                submissions.c.state.in_((QUEUED, GRADING))).order_by(submissions.c.id))]
            last = dict(conn.execute(select(submissions.c.student, func.max(submissions.c.started_at))
                                     .group_by(submissions.c.student)).all())
        return _in_claim_order(rows, last)

    def rows(self, assignment: str | None = None) -> list[dict]:
        """Every row as a dict (for status, report, tests), oldest first."""
        query = select(submissions).order_by(submissions.c.id)
        if assignment is not None:
            query = query.where(submissions.c.assignment == assignment)
        with self.engine.begin() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]
