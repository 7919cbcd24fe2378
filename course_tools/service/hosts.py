"""The grading hosts of a course: one row per `course serve` process, in the course's database.

Several hosts (machines, or process trees with their own host names) may serve one course on a
PostgreSQL gradebook. Each writes its row here when it starts and then every ``lease / 4``
seconds (its heartbeat, queue.Queue.beat, which also renews the leases of the rows it holds),
and marks it stopped when it ends cleanly. A host not seen for longer than its lease, and not
stopped, is dead (kill -9, a machine lost, a frozen namespace): the rows it held are taken
back by the others once their leases run out (queue.Queue.reclaim, which counts them here), and
`course status` names it.

The pending pages ("waiting in the queue", serve.py) are one host's job, not every host's: the
publisher is the live host (not stopped, seen within its lease) that started first (then the
smallest claimant). When it dies, the next one takes over once its lease has run out (at once
when it ran on the same machine: its pid is gone); a host with no live host before it (alone, or not registered) publishes them. Each host still
publishes the final page of every row it closes (worker.py).

    COURSE_SERVICE_LEASE_SECONDS   how long a host holds a claimed row without renewing it
                                   (default 60; at least 2): how long a dead host's rows wait

One row (the table ``course_grading_hosts``):

    claimant       queue.claimant(): host:pid:pid's start:random, as in the queue's claimed_by
    host, pid      the host name and pid of that process
    workers        its grading threads
    lease_seconds  its lease (COURSE_SERVICE_LEASE_SECONDS when it started)
    started_at, last_seen, stopped_at   naive UTC; stopped_at None while it serves (or died)
    reclaimed      rows it held that were put back (by another host, or its own successor)

Nothing here is kept only in memory: a host that restarts, or another host, reads it all back.
"""
from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

from sqlalchemy import Column, DateTime, Integer, MetaData, String, Table, select, update

from course_student.words import plural

DEFAULT_LEASE_SECONDS = 60
MIN_LEASE_SECONDS = 2
SHOWN_FOR = datetime.timedelta(days=1)   # `course status` names hosts seen within the last day

metadata = MetaData()
hosts = Table(
    "course_grading_hosts", metadata,
    Column("claimant", String(255), primary_key=True),
    Column("host", String(255), nullable=False),
    Column("pid", Integer),
    Column("workers", Integer),
    Column("lease_seconds", Integer, nullable=False),
    Column("started_at", DateTime, nullable=False),
    Column("last_seen", DateTime, nullable=False),
    Column("stopped_at", DateTime),
    Column("reclaimed", Integer, nullable=False, default=0),
)


def lease_seconds() -> int:
    """COURSE_SERVICE_LEASE_SECONDS (a clear error when it is not a whole number of at least 2)."""
    text = os.environ.get("COURSE_SERVICE_LEASE_SECONDS", "").strip()
    if not text:
        return DEFAULT_LEASE_SECONDS
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < MIN_LEASE_SECONDS:
        raise ValueError(f"COURSE_SERVICE_LEASE_SECONDS must be a whole number of seconds, at least "
                         f"{MIN_LEASE_SECONDS}, not {text!r}")
    return value


def register(conn, me: str, lease: int, workers: int, now: datetime.datetime) -> None:
    host, pid = me.split(":")[:2]
    conn.execute(hosts.insert().values(claimant=me, host=host, pid=int(pid), workers=workers, lease_seconds=lease,
                                       started_at=now, last_seen=now, stopped_at=None, reclaimed=0))


def seen(conn, me: str, now: datetime.datetime) -> bool:
    """This host's heartbeat; False when it has no row (registered by nobody)."""
    return conn.execute(update(hosts).where(hosts.c.claimant == me).values(last_seen=now)).rowcount == 1


def stopped(conn, me: str, now: datetime.datetime) -> None:
    conn.execute(update(hosts).where(hosts.c.claimant == me).values(last_seen=now, stopped_at=now))


def count_reclaimed(conn, claimants: dict[str, int]) -> None:
    """Add to each claimant's ``reclaimed`` the rows of it that were put back."""
    for claimant, n in claimants.items():
        conn.execute(update(hosts).where(hosts.c.claimant == claimant).values(reclaimed=hosts.c.reclaimed + n))


@dataclass
class Host:
    claimant: str
    host: str
    pid: int | None
    workers: int | None
    lease_seconds: int
    started_at: datetime.datetime
    last_seen: datetime.datetime
    stopped_at: datetime.datetime | None
    reclaimed: int

    def dead(self, now: datetime.datetime) -> bool:
        """Not stopped, and not seen for longer than its lease."""
        return self.stopped_at is None and now - self.last_seen > datetime.timedelta(seconds=self.lease_seconds)

    def line(self, now: datetime.datetime) -> str:
        """`course status`'s line on this host."""
        ago = int((now - self.last_seen).total_seconds())
        taken = f", {self.reclaimed} of its rows reclaimed" if self.reclaimed else ""
        if self.stopped_at is not None:
            return f"  host {self.host} (pid {self.pid}): stopped at {self.stopped_at:%H:%M:%S} UTC{taken}"
        if self.dead(now):
            return (f"  DEAD host {self.host} (pid {self.pid}): last seen {self.last_seen:%H:%M:%S} UTC, {ago} s ago "
                    f"(its lease: {self.lease_seconds} s){taken}")
        return (f"  host {self.host} (pid {self.pid}): serving since {self.started_at:%H:%M:%S} UTC with "
                f"{plural(self.workers, 'worker')}, last seen {ago} s ago{taken}")


def publisher(conn, now: datetime.datetime, known_dead=lambda claimant: False) -> str | None:
    """The claimant of the host that publishes the pending pages: the live host (not stopped, not
    ``Host.dead``, not ``known_dead``: a process of this machine that no longer runs) that started
    first, then the smallest claimant; None when none lives."""
    live = [h for h in recent(conn, now) if h.stopped_at is None and not h.dead(now) and not known_dead(h.claimant)]
    return min(live, key=lambda h: (h.started_at, h.claimant)).claimant if live else None


def recent(conn, now: datetime.datetime) -> list[Host]:
    """Hosts seen within SHOWN_FOR, the longest-serving first."""
    query = select(hosts).where(hosts.c.last_seen >= now - SHOWN_FOR).order_by(hosts.c.started_at)
    return [Host(**dict(r._mapping)) for r in conn.execute(query)]
