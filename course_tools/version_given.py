"""Which release version a student was given, as far as the course knows: the floor below which
grading never goes (grading/target.py), so that no student gets a better grade by making their
notebook look like an older version than the one they were given (deleting the cells of a task a
later release added, say: an older version's grading would count that task at their rate).

    given(course_root, assignment, student, submitted=None) -> Given | None
    note(course_root, assignment, student, submitted=None, version=None)

nbgrader's fetch leaves no record on the grader's side, and a notebook's cells and label are the
student's to change; what the course itself saw is the evidence:

  - the release dates: `course release` records each version (its manifest's ``recorded``) as it
    hands it out, so a student whose first submission came after vN was recorded was given vN or
    later (the exchange offered nothing older by then);
  - their own submissions: never lower than a version a submission of theirs already matched.

Both are kept per student and assignment, in

    <course>/release_versions/<assignment>/students/<student>.json   {"first": ISO time, "highest": "v3"}

written by every grading that knows its student (target.py: `course grade`, nbgrader's plugin, the
service), only ever moving ``first`` earlier and ``highest`` higher, under a lock. The student
cannot reach the file (the course folder is private), and deleting their own inbound folders
removes no evidence already noted.

What this cannot know: a student who fetched v1, never submitted before v2 was released, and
hands in v1's notebook afterwards is taken to have been given v2 (the tasks v2 added score 0, and
their feedback says why, before the deadline when the service runs).
"""
from __future__ import annotations

import datetime
import fcntl
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .release_versions import FOLDER, Version, VersionError, versions

LEDGER = "students"
# The most a ledger file may hold: two short fields (a student's own account cannot write it, but
# a damaged file must not make grading read without bound).
MAX_LEDGER_BYTES = 4096


@dataclass(frozen=True)
class Given:
    """The version a student was given at least, and why the course knows it."""
    version: Version
    by: str    # "released": it was out before their first submission; "submitted": they submitted it
    why: str   # a sentence for the instructor (names the dates or the version)


def utc(value) -> datetime.datetime | None:
    """``value`` (a datetime, naive meaning UTC, or an ISO 8601 string) as an aware UTC datetime;
    None when it is None or not a time."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value.strip().replace(" UTC", "").replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(value, datetime.datetime):
        return None
    return value.replace(tzinfo=datetime.timezone.utc) if value.tzinfo is None else value.astimezone(datetime.timezone.utc)


def _ledger(course_root: Path, assignment: str, student: str) -> Path:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in student).lstrip(".") or "_"
    return Path(course_root) / FOLDER / assignment / LEDGER / f"{safe}.json"


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read(MAX_LEDGER_BYTES + 1)[:MAX_LEDGER_BYTES] or b"{}")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise VersionError(f"the record of which versions {path.stem} was given, {path}, cannot be read ({err}); "
                           f"restore it from a backup (it only ever grows)") from None
    return data if isinstance(data, dict) else {}


def given(course_root: Path, assignment: str, student: str | None, submitted=None,
          stored: list[Version] | None = None) -> Given | None:
    """The newest version the course knows ``student`` was given (their submission being graded
    received at ``submitted``); None when it knows nothing (no student, no versions kept)."""
    stored = versions(Path(course_root), assignment) if stored is None else stored
    if not student or not stored:
        return None
    seen = _read(_ledger(course_root, assignment, student))
    times = [t for t in (utc(seen.get("first")), utc(submitted)) if t is not None]
    found = []
    if times:
        first = min(times)
        out = [v for v in stored if (utc(v.manifest.get("recorded")) or first) < first]
        if out:
            v = out[-1]
            found.append(Given(v, "released", f"{student}'s first submission of {assignment} "
                                              f"({first:%Y-%m-%d %H:%M:%S} UTC) came after {v.label} was released "
                                              f"({utc(v.manifest['recorded']):%Y-%m-%d %H:%M:%S} UTC)"))
    for v in stored:
        if v.label == seen.get("highest"):
            found.append(Given(v, "submitted", f"{student} submitted {v.label} of {assignment} before"))
    return max(found, key=lambda g: g.version.number) if found else None


def note(course_root: Path, assignment: str, student: str | None, submitted=None, version: Version | None = None) -> None:
    """Keep what a submission of ``student`` shows: its time (``first`` moves earlier) and the
    version it was graded as theirs (``highest`` moves higher). VersionError when it cannot be kept."""
    if not student or (submitted is None and version is None):
        return
    stored = versions(Path(course_root), assignment)
    if not stored:
        return
    path = _ledger(course_root, assignment, student)
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        with open(path.parent / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            seen = _read(path)
            before = dict(seen)
            when, first = utc(submitted), utc(seen.get("first"))
            if when is not None and (first is None or when < first):
                seen["first"] = when.isoformat()
            numbers = {v.label: v.number for v in stored}
            if version is not None and numbers.get(version.label, 0) > numbers.get(seen.get("highest"), 0):
                seen["highest"] = version.label
            if seen != before:
                handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".writing-")
                with os.fdopen(handle, "w") as out:
                    json.dump(seen, out, sort_keys=True)
                os.replace(scratch, path)
    except OSError as err:
        raise VersionError(f"cannot keep the record of which version {student} was given in {path.parent} "
                           f"({err.strerror or err})") from None
