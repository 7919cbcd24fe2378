"""Finding new submissions in the exchange and putting them in the queue.

Every released assignment's inbound folders are read through inbound.py, the same checks
`course collect` makes (owners, links, FIFOs, hard links, spoofed names, ctime-based times): a
refused folder is never graded (the log says why; `course collect` reports it as usual). An
accepted folder the queue does not know yet is

1. left for a later scan until it is complete and settled: its ``submission_secret.txt`` as
   nbgrader's submit writes it (submit creates the file before writing it) and two looks at
   least ``LOOK_SECONDS`` apart seeing the same latest ctime (a folder without a secret, once
   unchanged for ``SETTLE_SECONDS``); a queued folder that changes after it was taken is read
   again (copy, fingerprint, feedback names) while no worker has claimed it;
2. copied by inbound.py into ``<course>/.service/submissions/<folder>/`` (the copy the service
   grades: a student who changes the exchange folder afterwards changes nothing graded; the
   worker removes it once the row is closed); a folder larger than any submission
   (inbound.TooLarge) is recorded as refused, once, and its student's page says why;
3. enqueued with its recorded time, its notebook's result key and its feedback file names,
   unless its student has the policy's ``max_queued`` submissions of it waiting already: then
   it is recorded as done, "held" (kept for the final grading), and its page says so.
"""
from __future__ import annotations

import datetime
import hashlib
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import inbound
from ..build import release_notebook
from ..course_dir import Course
from ..grading.route import result_key
from . import pages
from .policy import Policy
from .publish import SECRET, feedback_folder, feedback_names, feedback_names_of_secret, publish, well_formed
from .queue import DONE, GRADING_ERROR, Queue, utcnow

SETTLE_SECONDS = 30
LOOK_SECONDS = 1.0      # two looks at a folder this far apart must agree before it is taken
TAKEN = ".taken"        # in the service's copy: the folder's latest ctime when it was taken
SERVICE_FOLDER = ".service"
log = logging.getLogger("course.serve")


def release_notebooks(assignment: str) -> list[str]:
    """The ids (file stems) of the notebooks of ``assignment``'s release."""
    return [p.stem for p in sorted(release_notebook(assignment).parent.glob("*.ipynb"))]


def copy_folder(course: Course) -> Path:
    return course.root / SERVICE_FOLDER / "submissions"


@dataclass
class Intake:
    course: Course
    queue: Queue
    assignments: list[str]
    policy_of: Callable[[str], Policy] = lambda assignment: Policy()   # the service's policy per assignment
    # What earlier scans saw: folder name -> (its latest ctime, when first seen so); the service
    # keeps it from one scan to the next (a folder is taken when two looks agree).
    looks: dict = field(default_factory=dict)

    def __post_init__(self):
        from nbgrader.coursedir import CourseDirectory

        defaults = CourseDirectory()
        self.ignore = list(self.course._setting("CourseDirectory", "ignore", defaults.ignore))
        self.max_bytes = int(self.course._setting("CourseDirectory", "max_file_size", defaults.max_file_size)) * 1024
        self.inbound = self.course.exchange / self.course.course_id / "inbound"
        self._told: set[str] = set()
        self.unsettled = 0   # folders left for a look soon (serve.py scans again within LOOK_SECONDS)

    def scan(self) -> list[int]:
        """Enqueue every new, settled, accepted submission; returns the new rows' ids."""
        new = []
        if not self.inbound.is_dir():
            return new
        for assignment in self.assignments:
            # Folders the queue holds are not examined again: a scan costs what is new, not
            # every submission so far (a rush means a scan after nearly every submission).
            # Queued ones are, so that a folder changed after it was taken is read again.
            queued = self.queue.queued_folders(assignment)
            known = self.queue.known_folders(assignment) - queued
            try:
                accepted, refused = inbound.examine(self.inbound, assignment, self.ignore, skip=known)
            except OSError as err:
                log.warning("cannot read %s: %s", self.inbound, err)
                continue
            for refusal in refused:
                if refusal.folder not in self._told:
                    self._told.add(refusal.folder)
                    log.warning("REFUSED %s (in the name of %s): %s; not graded", refusal.folder, refusal.student,
                                refusal.reason)
            for folder in accepted:
                try:
                    row = self._retake(assignment, folder) if folder.name in queued else self._take(assignment, folder)
                except Exception as err:  # noqa: BLE001 - one folder's failure is that folder's error, never the scan's
                    log.exception("the service could not take %s in", folder.name)
                    row = self._failed(assignment, folder, f"the grading service could not take it in "
                                                           f"({type(err).__name__}: {str(err)[:300]})")
                if row is not None:
                    new.append(row)
        return new

    def _refused(self, assignment: str, folder: inbound.Examined, why: str) -> None:
        """Record ``folder`` as done, refused (no scan takes it again), and tell its student why."""
        secret = inbound.read_small(folder.path, SECRET, 300)
        names = {} if secret is None else feedback_names_of_secret(secret.decode("ascii", "replace"),
                                                                  release_notebooks(assignment))
        row = self.queue.enqueue(assignment, folder.student, folder.name, folder.received, None, names,
                                 state=DONE, outcome="refused", error=why[:2000])
        if row is not None:
            for name in names.values():
                publish(feedback_folder(self.course.exchange, self.course.course_id), name,
                        pages.refused_page(assignment, folder.received, why))
        return None

    def _failed(self, assignment: str, folder: inbound.Examined, why: str) -> None:
        """Record ``folder`` as an error row (`course status` lists it; no scan takes it again) and
        tell its student, where its secret is known, that it is not graded yet."""
        target = copy_folder(self.course) / folder.name
        try:
            names = feedback_names(target, release_notebooks(assignment)) if target.is_dir() else {}
        except Exception:  # noqa: BLE001 - the error row matters more than the page
            names = {}
        row = self.queue.enqueue(assignment, folder.student, folder.name, folder.received, None, names,
                                 state=GRADING_ERROR, error=why[:2000])
        if row is not None:
            for name in names.values():
                publish(feedback_folder(self.course.exchange, self.course.course_id), name,
                        pages.error_page(assignment, folder.received))
        return None

    def _held(self, assignment: str, folder: inbound.Examined, most: int) -> None:
        """Record ``folder`` as done, held (its student has ``most`` waiting), and tell its student."""
        why = (f"You have {most} submissions of {assignment} waiting to be graded, the most one student may "
               f"have: this one is kept for the final grading but not graded now. Submit again once your "
               f"waiting submissions have their feedback.")
        secret = inbound.read_small(folder.path, SECRET, 300)
        names = {} if secret is None else feedback_names_of_secret(secret.decode("ascii", "replace"),
                                                                  release_notebooks(assignment))
        row = self.queue.enqueue(assignment, folder.student, folder.name, folder.received, None, names,
                                 state=DONE, outcome="held")
        if row is not None:
            for name in names.values():
                publish(feedback_folder(self.course.exchange, self.course.course_id), name,
                        pages.receipt_page(assignment, folder.received, why))

    def _settled(self, folder: inbound.Examined) -> bool:
        """Whether ``folder`` is complete and settled: its secret as nbgrader's submit writes it
        (submit creates the file before it writes it) and nothing in it changed since a look at
        least LOOK_SECONDS ago; a folder without such a secret once it has not changed for
        SETTLE_SECONDS (it gets no feedback page: its student could not fetch one)."""
        seen, now = self.looks.get(folder.name), time.monotonic()
        if seen is None or seen[0] != folder.received:
            self.looks[folder.name] = (folder.received, now)
            self.unsettled += 1
            return False
        secret = inbound.read_small(folder.path, SECRET, 300)
        complete = secret is not None and well_formed(secret.decode("ascii", "replace"))
        if now - seen[1] < LOOK_SECONDS or (
                not complete and utcnow() - folder.received < datetime.timedelta(seconds=SETTLE_SECONDS)):
            self.unsettled += 1
            return False
        return True

    def _copy(self, folder: inbound.Examined, target: Path) -> datetime.datetime | None:
        """Copy ``folder`` to ``target`` and mark it with the state it was taken in; its recorded
        time, or None when it changed since it was examined (looked at again at the next scan)."""
        collected = inbound.copy_into(folder, target, self.ignore, self.max_bytes)
        if collected.received != folder.received:
            shutil.rmtree(target, ignore_errors=True)
            self.looks.pop(folder.name, None)
            self.unsettled += 1
            return None
        (target / TAKEN).write_text(folder.received.isoformat())
        return collected.recorded

    def _retake(self, assignment: str, folder: inbound.Examined) -> None:
        """A queued folder: read again when it changed since it was taken (not yet claimed)."""
        target = copy_folder(self.course) / folder.name
        try:
            taken = (target / TAKEN).read_text()
        except OSError:
            return None
        if taken == folder.received.isoformat() or not self._settled(folder):
            return None
        if not self.queue.hold(folder.name, LOOK_SECONDS * 60):
            return None   # claimed meanwhile: graded as it was taken (the final grading reads it again)
        try:
            submitted_at = self._copy(folder, target)
            if submitted_at is not None:
                fingerprint, names = self._keys(assignment, target)
                log.info("%s changed after it was taken: read again", folder.name)
                self.queue.retaken(folder.name, submitted_at, fingerprint, names)
        finally:
            self.queue.hold(folder.name, 0)
        return None

    def _keys(self, assignment: str, target: Path) -> tuple[str | None, dict]:
        notebooks = release_notebooks(assignment)
        keys = [result_key(assignment, target / f"{nb}.ipynb") if (target / f"{nb}.ipynb").is_file() else None
                for nb in notebooks]
        fingerprint = None if None in keys else hashlib.sha256(",".join(keys).encode()).hexdigest()
        return fingerprint, feedback_names(target, notebooks)

    def _take(self, assignment: str, folder: inbound.Examined) -> int | None:
        if not self._settled(folder):
            return None   # nbgrader's submit may still be writing it
        most = self.policy_of(assignment).max_queued
        if self.queue.queued_of(assignment, folder.student) >= most:
            return self._held(assignment, folder, most)
        target = copy_folder(self.course) / folder.name
        try:
            if not target.is_dir():
                submitted_at = self._copy(folder, target)
                if submitted_at is None:
                    return None
            else:   # copied by another service process, or before a restart
                submitted_at = _recorded(target) or folder.received
        except inbound.TooLarge as why:   # the student's error: recorded once and said to them
            log.warning("REFUSED %s (in the name of %s): %s; not graded", folder.name, folder.student, why)
            return self._refused(assignment, folder, str(why))
        except inbound.Refused as why:
            log.warning("REFUSED %s (in the name of %s): %s; not graded", folder.name, folder.student, why)
            return None
        except OSError as err:
            log.warning("cannot copy %s: %s; trying again at the next scan", folder.name, err)
            return None
        fingerprint, names = self._keys(assignment, target)
        self.looks.pop(folder.name, None)
        return self.queue.enqueue(assignment, folder.student, folder.name, submitted_at, fingerprint, names)


def _recorded(copy: Path) -> datetime.datetime | None:
    from ..submission_times import read_timestamp

    return read_timestamp(copy / inbound.TIMESTAMP)
