"""Collecting from nbgrader's exchange: the inbound folders trust nothing a student controls.

A student owns the folders they submit into the exchange's ``inbound/`` and can put anything
there by hand: a symlink to the solution (nbgrader's own collect follows it, so the solution is
graded and comes back in the feedback), a FIFO (the copy hangs or fails the whole class), a hard
link, a folder named for a classmate, a ``timestamp.txt`` that says what they like, or none.
So `course collect` does not run nbgrader's collect. This module, for one assignment:

1. **examines** every folder ``<student>+<assignment>+<time>[+<random>]`` through directory file
   descriptors, never following a link or opening anything that is not a regular file:
   the folder must be a real directory holding only directories and regular files with one
   link each, every one owned by the account of the student the folder names (see
   ``expected_owner``), within ``MAX_ENTRIES`` entries and ``MAX_DEPTH`` levels. Anything else
   refuses the **whole folder**: nbgrader's submit never makes such a folder (it copies regular
   files), so it was made or changed by hand, and grading the part that is left would grade a
   submission nobody made. A refused folder is reported, never graded.
2. **chooses**, per student, the accepted folder the exchange saw change last (the latest ctime
   in it: the kernel sets it on every write, rename or chmod, and only root can set it back), so
   a classmate's spoof or one's own tampered folder never replaces the genuine latest one.
3. **copies** it into ``submitted/<student>/<assignment>/``, opening each file with O_NOFOLLOW
   relative to its folder's descriptor, checking that it is still the file examined, reading at
   most ``max_file_size`` (nbgrader's setting; larger files are left out, as nbgrader's copy
   does) and at most ``MAX_SUBMISSION_BYTES`` in all (more refuses the folder: ``TooLarge``),
   keeping holes as holes. A folder that changed under the copy is refused and the next one is taken.
4. **records** when it arrived (``submission_times.recorded_time``) in the collected
   ``timestamp.txt``, which nbgrader's autograde reads for the lateness and the late penalty.
"""
from __future__ import annotations

import datetime
import fnmatch
import json
import os
import pwd
import shutil
import stat
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import submission_times

MAX_ENTRIES = 1000      # files and folders in one submission (a release has a handful)
MAX_DEPTH = 8
# All the files of one submission together, by their size as a reader sees it (a sparse file
# counts whole): a release is a notebook of a few hundred kB; nbgrader's max_file_size bounds
# each file only (100 MB by default), not how many of them one submission holds.
MAX_SUBMISSION_BYTES = 64 * 1024 ** 2
CHUNK = 1 << 20
TIMESTAMP = "timestamp.txt"
REFUSALS = "refused-submissions"   # the course folder's record of what collect refused, one JSON per assignment


class Refused(Exception):
    """A folder that is not collected; the message says why, for the instructor."""


class TooLarge(Refused):
    """A folder larger than any submission (MAX_SUBMISSION_BYTES): the student's error, said to them."""


@dataclass
class Refusal:
    folder: str         # the inbound folder's name
    student: str        # the student the name claims
    reason: str


@dataclass
class Collected:
    student: str
    folder: str                 # the inbound folder collected
    recorded: datetime.datetime  # the time written into timestamp.txt (naive UTC)
    note: str = ""              # why it is not the time the submission claims, if it is not
    left_out: list[str] = field(default_factory=list)  # files over nbgrader's max_file_size
    received: datetime.datetime | None = None  # the latest ctime the copy saw (naive UTC)


@dataclass
class Outcome:
    collected: list[Collected]
    refused: list[Refusal]
    # student -> when the exchange first saw a genuine folder of theirs (the earliest of their folders'
    # latest ctimes, naive UTC): version_given.py's evidence of the release they were given
    first_seen: dict[str, datetime.datetime] = field(default_factory=dict)


@dataclass
class Examined:
    """An inbound folder that passed every check of ``examine`` (not yet copied)."""
    name: str
    student: str
    path: Path
    received: datetime.datetime   # the latest ctime in the folder (naive UTC)
    name_time: datetime.datetime | None


# ---------------------------------------------------------------------------------- whose folder
def expected_owner(student: str) -> tuple[int, str]:
    """The uid that must own a folder submitted in ``student``'s name, and a description of it.

    The account of a student is the Unix user of the same name: on the course's hub every
    roster name is the Unix account its server runs as (JupyterHub's LocalProcessSpawner), and
    nbgrader names each submission after it. Where no Unix user of that name exists, the
    machine has no account for that student (a self-paced learner, a single-user course, the
    demo class, where one account plays every student): the folder must then belong to the
    account that collects. So on a hub a student's folder in a classmate's name, or in a name
    without an account, is refused, and a single-user setup keeps working.
    """
    try:
        return pwd.getpwnam(student).pw_uid, f"the account {student}"
    except KeyError:
        uid = os.geteuid()
        return uid, f"the collecting account {_user(uid)} ({student} has no Unix account)"


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# ---------------------------------------------------------------------------------- the walk
def _utc(seconds: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).replace(tzinfo=None)


def _check_entry(st: os.stat_result, where: str, owner: int, owner_text: str) -> None:
    if st.st_uid != owner:
        raise Refused(f"{where} is owned by {_user(st.st_uid)}, not by {owner_text}")
    if stat.S_ISDIR(st.st_mode):
        return
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{where} is a symbolic link (never followed)")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise Refused(f"{where} is {kind} (never opened)")
    if st.st_nlink != 1:
        raise Refused(f"{where} has {st.st_nlink} hard links (a file linked from outside the submission)")


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _open_dir(name: str, dir_fd: int | None, examined: os.stat_result) -> int:
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    if not _same(os.fstat(fd), examined):
        os.close(fd)
        raise Refused(f"{name} changed while it was being collected")
    return fd


def _copy_file(name: str, dir_fd: int, examined: os.stat_result, dest: Path, limit: int) -> None:
    """Copy the regular file ``name`` (examined as ``examined``) to ``dest``: opened without
    following a link or blocking on a FIFO, and checked to be the very file examined. Runs of
    zeros a chunk long are left as holes, so a sparse file stays sparse (its 64 MB of holes are
    not 64 MB on the course's disk)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        opened = os.fstat(fd)
        if not (_same(opened, examined) and stat.S_ISREG(opened.st_mode) and opened.st_nlink == 1):
            raise Refused(f"{name} changed while it was being collected")
        left = limit + 1
        with open(dest, "wb") as out:
            while left > 0:
                chunk = os.read(fd, min(CHUNK, left))
                if not chunk:
                    break
                if chunk.count(0) == len(chunk):
                    out.seek(len(chunk), os.SEEK_CUR)
                else:
                    out.write(chunk)
                left -= len(chunk)
            out.truncate()
        if left <= 0:
            raise Refused(f"{name} grew past {limit} bytes while it was being collected")
    finally:
        os.close(fd)


def read_small(folder: Path, name: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``folder/name`` (never a link, never blocking
    on a FIFO); None when it is not such a file or cannot be read."""
    try:
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)


class _Walk:
    """One pass over a submission folder through directory descriptors: checks every entry
    (``_check_entry``), finds its latest ctime, and copies it into ``dest`` when one is given."""

    def __init__(self, owner: int, owner_text: str, ignore: list[str], max_bytes: int):
        self.owner, self.owner_text = owner, owner_text
        self.ignore, self.max_bytes = ignore, max_bytes
        self.entries = 0
        self.copied_bytes = 0
        self.latest_ctime = 0.0
        self.left_out: list[str] = []

    def folder(self, path: Path, dest: Path | None = None) -> None:
        top = os.stat(path, follow_symlinks=False)
        _check_entry(top, "the folder", self.owner, self.owner_text)
        if not stat.S_ISDIR(top.st_mode):
            raise Refused("it is not a folder")
        self.latest_ctime = top.st_ctime
        fd = _open_dir(str(path), None, top)
        try:
            self._inside(fd, "", dest, 0)
        finally:
            os.close(fd)

    def _inside(self, fd: int, prefix: str, dest: Path | None, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise Refused(f"{prefix or 'it'} is nested more than {MAX_DEPTH} folders deep")
        for name in sorted(os.listdir(fd)):
            where = prefix + name
            self.entries += 1
            if self.entries > MAX_ENTRIES:
                raise Refused(f"it holds more than {MAX_ENTRIES} files and folders")
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            _check_entry(st, where, self.owner, self.owner_text)
            self.latest_ctime = max(self.latest_ctime, st.st_ctime)
            skipped = any(fnmatch.fnmatch(name, pattern) for pattern in self.ignore)
            if stat.S_ISDIR(st.st_mode):
                sub = _open_dir(name, fd, st)
                try:
                    if dest is not None and not skipped:
                        (dest / name).mkdir()
                    self._inside(sub, where + "/", None if dest is None or skipped else dest / name, depth + 1)
                finally:
                    os.close(sub)
            elif dest is not None and not skipped:
                if st.st_size > self.max_bytes:
                    self.left_out.append(f"{where} ({st.st_size // 1024} KB, over nbgrader's max_file_size)")
                else:
                    self.copied_bytes += st.st_size
                    if self.copied_bytes > MAX_SUBMISSION_BYTES:
                        raise TooLarge(f"its files hold more than {MAX_SUBMISSION_BYTES // 1024 ** 2} MB in all "
                                       f"(at {where}); a submission is the assignment's notebook as nbgrader's "
                                       f"submit copies it, a few hundred kB to a few MB")
                    _copy_file(name, fd, st, dest / name, self.max_bytes)


# ---------------------------------------------------------------------------------- collect
def _parse_name(name: str, assignment: str) -> tuple[str, datetime.datetime | None] | None:
    """(student, the time in the name) of an inbound folder of ``assignment``, else None.
    nbgrader names them ``<student>+<assignment>+<time>`` with an optional ``+<random>``."""
    parts = name.split("+")
    if len(parts) not in (3, 4) or parts[1] != assignment or not parts[0]:
        return None
    return parts[0], submission_times.parse_timestamp(parts[2])


def examine(inbound: Path, assignment: str, ignore: list[str], only: str | None = None,
            skip: frozenset[str] | set[str] = frozenset()) -> tuple[list[Examined], list[Refusal]]:
    """Every inbound folder of ``assignment`` (of the student ``only``; not those named in ``skip``,
    which the grading service has taken already), examined as the module docstring's step 1
    says: (accepted, refused). `course collect` and the grading service use it."""
    accepted, refused = [], []
    for name in sorted(os.listdir(inbound)):
        if name in skip:
            continue
        parsed = _parse_name(name, assignment)
        if parsed is None or (only is not None and parsed[0] != only):
            continue
        student, name_time = parsed
        owner, owner_text = expected_owner(student)
        walk = _Walk(owner, owner_text, ignore, max_bytes=0)
        try:
            walk.folder(inbound / name)
        except Refused as why:
            refused.append(Refusal(name, student, str(why)))
            continue
        except OSError as err:  # vanished, or unreadable to the collecting account
            refused.append(Refusal(name, student, f"cannot be read ({err.strerror})"))
            continue
        except Exception as err:  # noqa: BLE001 - one folder's failure is that folder's, never the batch's
            refused.append(Refusal(name, student, f"could not be examined ({type(err).__name__}: {str(err)[:200]})"))
            continue
        accepted.append(Examined(name, student, inbound / name, _utc(walk.latest_ctime), name_time))
    return accepted, refused


def copy_into(folder: Examined, target: Path, ignore: list[str], max_bytes: int) -> Collected:
    """Copy ``folder`` into ``target`` (replacing what was there) with its recorded time."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.collecting-", dir=target.parent))
    try:
        owner, owner_text = expected_owner(folder.student)
        walk = _Walk(owner, owner_text, ignore, max_bytes)
        walk.folder(folder.path, staging)
        stamp = staging / TIMESTAMP
        claims = [folder.name_time]
        if stamp.is_file():
            claims.append(submission_times.read_timestamp(stamp))
        recorded, note = submission_times.recorded_time(claims, _utc(walk.latest_ctime))
        stamp.write_text(recorded.strftime(submission_times.FORMAT))
        for path in [staging, *staging.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Collected(folder.student, folder.name, recorded, note, walk.left_out, _utc(walk.latest_ctime))


def collect(inbound: Path, submitted: Path, assignment: str, ignore: list[str], max_bytes: int,
            only: str | None = None) -> Outcome:
    """Collect ``assignment`` from the exchange's ``inbound`` folder into nbgrader's ``submitted``
    folder, as the module docstring says: per student (or only the student ``only``) the latest
    folder that passes every check."""
    accepted, refused = examine(inbound, assignment, ignore, only)
    by_student: dict[str, list[Examined]] = {}
    for folder in accepted:
        by_student.setdefault(folder.student, []).append(folder)
    collected = []
    for student, folders in sorted(by_student.items()):
        for folder in sorted(folders, key=lambda f: f.received, reverse=True):
            try:
                collected.append(copy_into(folder, submitted / student / assignment, ignore, max_bytes))
                break
            except Refused as why:
                refused.append(Refusal(folder.name, student, str(why)))
            except OSError as err:
                refused.append(Refusal(folder.name, student, f"cannot be copied ({err.strerror})"))
    return Outcome(collected, refused, {student: min(f.received for f in folders)
                                        for student, folders in by_student.items()})


# ---------------------------------------------------------------------------------- the record
def save_refusals(course_root: Path, assignment: str, refused: list[Refusal], only: str | None = None) -> None:
    """Keep what the latest collect of ``assignment`` refused, for `course status` and the report;
    after a collect of ``only`` one student, the others' refusals stay as they were."""
    if only is not None:
        refused = [r for r in load_refusals(course_root, assignment) if r.student != only] + refused
    folder = course_root / REFUSALS
    folder.mkdir(exist_ok=True)
    (folder / f"{assignment}.json").write_text(json.dumps([asdict(r) for r in refused], indent=1))


def load_refusals(course_root: Path, assignment: str) -> list[Refusal]:
    """What the latest collect of ``assignment`` refused (empty when nothing was, or it never ran)."""
    try:
        return [Refusal(**r) for r in json.loads((course_root / REFUSALS / f"{assignment}.json").read_text())]
    except (OSError, ValueError, TypeError):
        return []
