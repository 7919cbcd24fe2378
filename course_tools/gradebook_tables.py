"""Creating the course database's tables when several processes may open a new database at once.

A course's database (the gradebook's ``db_url``) is created by whichever process opens it first:
``course release`` (nbgrader's Gradebook), the grading service (its queue table), formgrader. Two
doing it at the same moment both see a table missing and both issue CREATE TABLE; the second
fails with "table ... already exists" (SQLite) or a duplicate key in pg_type (PostgreSQL). Creation
is idempotent, so the loser only has to look again: what the winner made is then there."""
from __future__ import annotations

import datetime
import time
from typing import Callable, TypeVar

T = TypeVar("T")

ATTEMPTS = 8


def utcnow() -> datetime.datetime:
    """Now, as the course's database keeps times: naive UTC, as nbgrader's gradebook does."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _made_by_another(err: Exception) -> bool:
    """Whether a database error says that another process created the thing at the same time."""
    text = str(getattr(err, "orig", err)).lower()
    # nbgrader's Gradebook also adds the course's row: the loser gets a unique-key error, wrapped
    # in nbgrader's InvalidEntry.
    return any(sign in text for sign in ("already exists", "duplicate key", "unique constraint failed"))


def create_racing_others(create: Callable[[], T]) -> T:
    """``create()`` (which creates what is missing, checking first), again after a short wait when
    another process created the same table (or row) between the check and the CREATE; any other
    error is raised at once."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return create()
        except Exception as err:  # noqa: BLE001 - SQLAlchemy's errors, or nbgrader's InvalidEntry around one
            if attempt == ATTEMPTS or not _made_by_another(err):
                raise
            time.sleep(0.05 * attempt)
    raise AssertionError("unreachable")
