"""When did a submission really arrive? Not when the student says.

nbgrader's exchange names each submission folder after a time the student's own process
chooses, writes it into timestamp.txt too, and leaves both owned by the student: a student can
backdate a late submission, delete or empty timestamp.txt, fill it with garbage or a date in the
future, or swap the notebook in an on-time submission after the deadline (and ``touch`` it back:
a file's mtime is the owner's to set). What a student cannot set is a file's status-change time
(ctime): the kernel stamps it on every write, rename or chmod, and only root can set it back.

So the time recorded for a collected submission (inbound.py writes it into the collected
timestamp.txt, which nbgrader's autograde turns into the lateness and the late penalty) is the
latest ctime in its exchange folder, ``received``, unless the submission's claim (the latest
time its name and its timestamp.txt give) agrees with it: no later than ``received`` and no
more than ``TOLERANCE_S`` earlier (nbgrader's submit stamps the time before it copies the
files, and a copy takes a moment). Anything unreadable is no claim, so it is never on time by
default: it counts from when the exchange last saw the folder change.
"""
from __future__ import annotations

import datetime

# A copy into the exchange takes seconds; a claim earlier than that is not the time it arrived.
TOLERANCE_S = 120
# File times come from the kernel's coarse clock, a few milliseconds behind the one nbgrader reads.
CLOCK_SLACK_S = 1.0
FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


# nbgrader writes 30 characters ("2026-12-03 19:11:47.123456 UTC"); the date parser's cost grows
# about with the square of its input (a 1 MB timestamp.txt took minutes), so nothing longer is parsed.
MAX_TIMESTAMP_CHARS = 100


def parse_timestamp(text: str) -> datetime.datetime | None:
    """A timestamp as nbgrader writes it, as naive UTC; None if it cannot be read (or is longer
    than any timestamp: MAX_TIMESTAMP_CHARS)."""
    from nbgrader.utils import parse_utc

    if len(text) > MAX_TIMESTAMP_CHARS:
        return None
    try:
        return parse_utc(text.strip()).replace(tzinfo=None)
    except (ValueError, OverflowError, TypeError):
        return None


def recorded_time(claims: list[datetime.datetime | None], received: datetime.datetime,
                  tolerance_s: float = TOLERANCE_S) -> tuple[datetime.datetime, str]:
    """The time to record for a submission the exchange last saw change at ``received``, given
    what it claims (None for a claim that is missing or unreadable), and why it is not the
    claim when it is not ("" when it is). See the module docstring."""
    readable = [c for c in claims if c is not None]
    if not readable:
        return received, "no readable submission time: the exchange's time"
    claimed = max(readable)  # the latest evidence the submission gives
    if claimed > received + datetime.timedelta(seconds=CLOCK_SLACK_S):
        return received, (f"claims {claimed:%Y-%m-%d %H:%M:%S}, after the exchange last saw it change: "
                          f"the exchange's time")
    if (received - claimed).total_seconds() > tolerance_s:
        return received, (f"claims {claimed:%Y-%m-%d %H:%M:%S}, but the exchange last saw it change at "
                          f"{received:%Y-%m-%d %H:%M:%S}: the exchange's time")
    return claimed, ""


def read_timestamp(path) -> datetime.datetime | None:
    """The timestamp in the file ``path``, reading at most what a timestamp can be (None when
    the file is missing, unreadable or holds no timestamp)."""
    try:
        with open(path, "rb") as stamp:
            text = stamp.read(MAX_TIMESTAMP_CHARS + 1)
    except OSError:
        return None
    return parse_timestamp(text.decode("utf-8", "replace"))


def collected_time(folder) -> datetime.datetime | None:
    """The time `course collect` recorded for the collected submission in ``folder``
    (submitted/<student>/<assignment>/, its timestamp.txt); None when there is none."""
    from pathlib import Path

    return read_timestamp(Path(folder) / "timestamp.txt")
