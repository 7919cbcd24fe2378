"""When did a submission really arrive? nbgrader trusts the student's own clock.

nbgrader's exchange names each submission folder after a timestamp the student's process
writes (also into timestamp.txt), and the files stay owned by the student: a student can
backdate a late submission, or swap the notebook in an on-time submission after the deadline.
What a student cannot set is a file's status-change time (ctime): the kernel stamps it on every
write, rename or chmod, and only root can forge it.

After `nbgrader collect`, ``audit`` compares each collected submission's claimed time with the
latest ctime in its exchange folder. Where the claim is earlier by more than ``tolerance`` (a
slow copy into the exchange takes a while), the collected timestamp.txt is replaced by the
time the exchange last saw a change, and the late penalty follows from that.
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

TOLERANCE_S = 600
_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


@dataclass
class Correction:
    student: str
    claimed: datetime.datetime
    received: datetime.datetime


def parse_timestamp(text: str) -> datetime.datetime | None:
    """A timestamp as nbgrader writes it, as naive UTC; None if it cannot be read."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text.strip()).replace(tzinfo=None)
    except (ValueError, OverflowError):
        return None


def last_change(folder: Path) -> datetime.datetime:
    """The latest status-change time (UTC, naive) of ``folder`` and everything in it."""
    latest = max(p.lstat().st_ctime for p in [folder, *folder.rglob("*")])
    return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc).replace(tzinfo=None)


def audit(inbound: Path, submitted: Path, assignment: str, students: list[str],
          tolerance_s: float = TOLERANCE_S) -> list[Correction]:
    """Correct backdated submissions of ``assignment`` in ``submitted`` (see the module docstring)."""
    corrections = []
    for student in students:
        stamp_file = submitted / student / assignment / "timestamp.txt"
        try:
            claimed_text = stamp_file.read_text()
        except OSError:
            continue
        claimed = parse_timestamp(claimed_text)
        sources = [f for f in inbound.glob(f"{student}+{assignment}+*")
                   if (f / "timestamp.txt").is_file() and (f / "timestamp.txt").read_text() == claimed_text]
        if claimed is None or not sources:
            continue
        received = max(last_change(f) for f in sources)
        if (received - claimed).total_seconds() > tolerance_s:
            stamp_file.chmod(0o644)
            stamp_file.write_text(received.strftime(_FORMAT))
            corrections.append(Correction(student, claimed, received))
    return corrections
