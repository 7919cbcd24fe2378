"""A serving host's heartbeat in the course database: its row among the grading hosts (hosts.py)
and the leases of the queue's rows it holds (queue.py), kept alive while it lives.

    register(queue, me, lease, workers)   when `course serve` starts
    beat(queue, me, lease, hold_seconds)  every quarter lease: seen now, its rows' leases renewed
    stopped(queue, me)                    when it ends cleanly (not dead: nothing to take back)
    grading_hosts(queue)                  the hosts seen within the last day, for `course status`
    publishes_pending(queue, me)          whether ``me`` is the host that publishes the pending pages
"""
from __future__ import annotations

import datetime

from sqlalchemy import inspect, select, update

from . import hosts
from .claimants import known_dead
from .queue import GRADING, Queue, submissions, utcnow


def register(queue: Queue, me: str, lease: int, workers: int) -> None:
    with queue.engine.begin() as conn:
        hosts.register(conn, me, lease, workers, utcnow())


def beat(queue: Queue, me: str, lease: int, hold_seconds) -> int:
    """Host ``me`` was seen now, and the rows it holds keep their lease for ``lease`` seconds more,
    never past ``hold_seconds(assignment)`` after their claim (the grading's own limit and slack:
    a grading stuck past it is taken back even from a live host). Returns how many rows it holds."""
    now = utcnow()
    with queue.engine.begin() as conn:
        hosts.seen(conn, me, now)
        held = conn.execute(select(submissions.c.id, submissions.c.assignment, submissions.c.started_at).where(
            submissions.c.claimed_by == me, submissions.c.state == GRADING)).all()
        for row_id, assignment, started in held:
            until = min(now + datetime.timedelta(seconds=lease),
                        started + datetime.timedelta(seconds=hold_seconds(assignment)))
            conn.execute(update(submissions).where(submissions.c.id == row_id, submissions.c.claimed_by == me,
                                                   submissions.c.state == GRADING).values(lease_until=until))
    return len(held)


def stopped(queue: Queue, me: str) -> None:
    with queue.engine.begin() as conn:
        hosts.stopped(conn, me, utcnow())


def publishes_pending(queue: Queue, me: str) -> bool:
    """Whether host ``me`` publishes the queued rows' pending pages now (hosts.publisher): it is
    the publisher, or no host lives (``me`` alone and not registered, or its own beat late)."""
    with queue.engine.begin() as conn:
        return hosts.publisher(conn, utcnow(), lambda claimant: known_dead(claimant, me)) in (me, None)


def grading_hosts(queue: Queue) -> list[hosts.Host]:
    """The hosts seen within the last day (none where no host ever wrote its row)."""
    if not inspect(queue.engine).has_table(hosts.hosts.name):
        return []
    with queue.engine.begin() as conn:
        return hosts.recent(conn, utcnow())
