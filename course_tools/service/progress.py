"""The LMS's view of each submission while `course serve` runs (``c.LMS.post_progress``, read when
the service starts; off by default): a thread of the service posts AGS progress, through
course_tools/lms/progress.py, which says what is posted, when never, and how it is recorded.

    wanted(rows, written)   per assignment and student, the progress of their latest submission in
                            the queue: "Pending" once it arrived, "PendingManual" once the service
                            graded it and the assignment has written answers
    Poster                  the thread: a round whenever the queue moved, and every IDLE_SECONDS;
                            after a round the LMS did not complete, the next only after a pause that
                            doubles up to MAX_PAUSE_SECONDS

The state is the course's database, never this process's memory: the queue (what arrived and
what was graded) and the ledger's course_lms_progress (what the LMS was told). A service killed
at any moment, restarted, posts what is still due, once. Grading never waits for the LMS: the
rounds run in their own thread, and whatever the LMS answers, or does not, is logged there.
"""
from __future__ import annotations

import functools
import logging
import threading

from ..build import manual_tasks
from ..course_dir import Course
from ..lms.progress import PENDING, PENDING_MANUAL, Progress, Round, post
from ..lms.registration import LmsError
from .queue import DONE, Queue

IDLE_SECONDS = 30.0          # a round even when nothing woke the poster (another service's rows)
FIRST_PAUSE_SECONDS = 15.0   # after a round the LMS did not complete
MAX_PAUSE_SECONDS = 600.0
GRADED = ("graded", "reused")   # outcomes whose feedback came from a grading of this submission
log = logging.getLogger("course.serve")


def wanted(rows: list[dict], written) -> list[Progress]:
    """Progress per (assignment, student) from the queue's ``rows`` (their latest submission);
    ``written(assignment)``: whether it has hand-graded answers. A folder the intake refused (not
    a submission) counts for nothing."""
    latest: dict[tuple[str, str], dict] = {}
    for row in rows:
        if row["outcome"] == "refused":
            continue
        key = (row["assignment"], row["student"])
        if key not in latest or (row["submitted_at"], row["id"]) > (latest[key]["submitted_at"], latest[key]["id"]):
            latest[key] = row
    found = []
    for (assignment, student), row in sorted(latest.items()):
        graded = row["state"] == DONE and row["outcome"] in GRADED
        found.append(Progress(assignment, student, PENDING_MANUAL if graded and written(assignment) else PENDING))
    return found


class Poster:
    def __init__(self, course: Course, queue: Queue):
        self.course, self.queue = course, queue
        self.due, self.stop = threading.Event(), threading.Event()
        self.pause = 0.0
        self._said = ""
        self.thread = threading.Thread(target=self._run, name="lms-progress", daemon=True)

    @staticmethod
    @functools.cache
    def written(assignment: str) -> bool:
        return bool(manual_tasks(assignment))

    def round(self) -> Round | None:
        """One round; None when it failed before any post (logged once per distinct reason)."""
        try:
            outcome = post(self.course, wanted(self.queue.rows(), self.written))
        except LmsError as err:
            self._say(f"LMS progress not posted: {err}")
            return None
        except Exception as err:  # noqa: BLE001 - the LMS's trouble is never the service's
            log.exception("LMS progress not posted")
            self._say(f"LMS progress not posted: {type(err).__name__}")
            return None
        if outcome.sent or outcome.refused:
            log.info("LMS progress: %d posted, %d refused", len(outcome.sent), len(outcome.refused))
        for student, why in outcome.refused:
            log.warning("LMS progress of %s refused: %s", student, why[:300])
        if outcome.stopped:
            self._say(f"LMS progress: {len(outcome.waiting)} waiting, tried again later: {outcome.stopped[:300]}")
            return outcome
        self._said = ""
        return outcome

    def _say(self, text: str) -> None:
        if text != self._said:
            log.error("%s", text)
            self._said = text

    def _run(self) -> None:
        while not self.stop.is_set():
            if self.pause:
                self.stop.wait(self.pause)   # the LMS failed: not before the pause, whatever arrives
            else:
                self.due.wait(IDLE_SECONDS)
            self.due.clear()
            if self.stop.is_set():
                return
            outcome = self.round()
            complete = outcome is not None and not outcome.stopped
            self.pause = 0.0 if complete else min(MAX_PAUSE_SECONDS, max(FIRST_PAUSE_SECONDS, 2 * self.pause))

    def start(self) -> None:
        self.thread.start()

    def close(self, last_round: bool = False) -> None:
        """Stop the thread (after the round it is in); ``last_round``: one more, here (`--once`)."""
        self.stop.set()
        self.due.set()
        if self.thread.ident is not None:
            self.thread.join(timeout=None if last_round else 5)
        if last_round:
            self.round()
