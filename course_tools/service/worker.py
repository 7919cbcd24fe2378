"""One worker of the service: claim a row, decide under the policy, grade, publish, close.

For a claimed submission, in this order:

    closed       the late window is over                  -> done, a receipt ("closed")
    mistake      the student's own mistake keeps it from being graded (mistakes.py: a notebook
                 under another name, not a notebook, another assignment's) -> done, a page
                 saying what is wrong; no attempt used, not retried, no grading error
    reused       every notebook's result is stored         -> done, its feedback (no attempt used)
    hidden       the policy's feedback is "none"          -> done, a receipt
    over_limit   the day's graded attempts are used       -> done, a receipt saying when the next one is
    timed_out_before  the same program (fingerprint) ran past its time limit before
                                                           -> done, a receipt (no attempt used)
    graded       graded through route.grade_one in a process forked from pool.py's fork server,
                 killed past route.time_limit              -> done, its feedback
    timed_out    killed at route.time_limit                -> grading_error, outcome timed_out: the
                 attempt stays used, a page saying it ran out of time, never tried again
    grading_error  the grader failed                       -> back in the queue (retry) up to
                 GRADING_TRIES claims in all, then a page "not graded yet" (course status lists
                 it), never a score; so is a row claimed more than GRADING_TRIES times (each
                 claimant died with it: a notebook that takes its host down is not handed to
                 every host in turn)

Exactly once: a grading's result goes into the ResultStore (results.py, keyed by content) and
the row's ``gradings`` count before anything is published, and the row is closed last; a
worker killed at any point (or its whole host: kill -9, a machine lost) leaves a row that is
reclaimed (queue.py; another host's after its lease) and then finds the stored result (no
second grading) or grades what never finished. A worker whose row was taken from it meanwhile
(its host frozen past the lease) counts, publishes and closes nothing. Publishing is idempotent (the same
page under the same name). Once a row is closed, the service's copy of its folder is removed
(the exchange's own folder stays for the final grading).
"""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..course_dir import Course
from ..grading.results import ResultStore
from ..grading.route import is_stored_score, keep_result, stored_result, time_limit
from ..grading.settings import GradingSettings
from . import pages
from .intake import copy_folder, release_notebooks
from .mistakes import found_notebooks, mistake
from .policy import Policy
from .publish import feedback_folder, feedback_names, publish
from .queue import DONE, GRADING_ERROR, Queue, Row

LEASE_SLACK_SECONDS = 120
TIMED_OUT_BEFORE = ("This notebook is the same program as a submission whose grading ran past its time limit, so it "
                    "is not graded again before the deadline. Change it (look for code that sleeps, waits for "
                    "input or loops without end) and submit again; the final grading grades your last submission.")
GRADING_TRIES = 3             # claims of one row before its grading error is final
RETRY_AFTER_SECONDS = 10.0    # times the claims so far: a grader that failed for a passing reason
                              # (a full disk, memory pressure) gets a moment
log = logging.getLogger("course.serve")


@dataclass
class Worker:
    course: Course
    queue: Queue
    settings: GradingSettings
    policy_of: callable            # assignment -> Policy
    me: str
    grader: object = None          # dispatch.Here or dispatch.OnDask; None: Here
    host_lease: int | None = None  # the lease a claim starts with, renewed by the service's heartbeat
                                   # (hosts.py); None: the whole hold_seconds, never renewed

    def __post_init__(self):
        if self.grader is None:
            from .dispatch import Here

            self.grader = Here(self.settings)
        self.store = ResultStore(self.course.root)
        self.feedback = feedback_folder(self.course.exchange, self.course.course_id)

    def hold_seconds(self, assignment: str) -> int:
        """The longest a row of ``assignment`` is held: its grading's time limit and slack."""
        return time_limit(assignment, self.settings) + LEASE_SLACK_SECONDS

    def lease_seconds(self, row: Row) -> int:
        hold = self.hold_seconds(row.assignment)
        return hold if self.host_lease is None else min(hold, self.host_lease)

    def work_one(self) -> bool:
        """Claim and handle one queued row; False when none was queued."""
        row = self.queue.claim(self.me, self.lease_seconds)
        if row is None:
            return False
        if row.attempts > GRADING_TRIES:
            # Claimed more often than its retries allow: each earlier claimant died with it (a host
            # killed, or a notebook that takes its host down). Not tried on yet another host.
            self._grading_error(row, f"claimed {row.attempts} times: each service that took it died or lost it "
                                     f"before it was done", retry=False)
            return True
        try:
            self.handle(row)
        except Exception as err:  # noqa: BLE001 - the service's own failure: that row's grading error
            log.exception("the service failed on %s", row.folder)
            self._grading_error(row, f"the grading service failed ({type(err).__name__}: {str(err)[:300]})")
        return True

    # ------------------------------------------------------------------ one row
    def handle(self, row: Row) -> None:
        policy: Policy = self.policy_of(row.assignment).for_student(row.student)
        when = row.submitted_at
        if policy.closed(when):
            self._receipt(row, "closed", f"The late window of {row.assignment} ended at "
                                         f"{policy.closes:%Y-%m-%d %H:%M} UTC, so it is no longer graded before the "
                                         f"final grading.", policy)
            return
        folder = copy_folder(self.course) / row.folder
        wrong = mistake(row.assignment, folder, release_notebooks(row.assignment), self.settings.course_root)
        if wrong is not None:
            self._mistake(row, folder, wrong)
            return
        notebooks = {nb: folder / f"{nb}.ipynb" for nb in row.feedback_names} or {
            p.stem: p for p in sorted(folder.glob("*.ipynb"))}
        # This student's submission: what the course knows of the release version they were given
        # is part of what it is graded against (target.py).
        settings = self.settings.for_submission(row.student, when)
        keys, stored = {}, {}
        for nb, path in notebooks.items():
            keys[nb], stored[nb] = (stored_result(self.store, row.assignment, path, settings)
                                    if path.is_file() else (None, None))
        if stored and all(result is not None for result in stored.values()):
            self._graded(row, policy, stored, outcome="reused", counted=False, graded=False)
            return
        if policy.feedback == "none":
            self._receipt(row, "hidden", f"Feedback before the deadline is off for {row.assignment}.", policy)
            return
        if row.fingerprint is not None and self.queue.timed_out_before(row.fingerprint, row.id):
            self._receipt(row, "timed_out_before", TIMED_OUT_BEFORE, policy)
            return
        if not self.queue.take_attempt(row, policy.attempts_per_day):
            self._receipt(row, "over_limit",
                          f"Today's graded attempts of {row.assignment} are used up ({policy.attempts_per_day} a "
                          f"day, UTC; an unchanged resubmission does not use one). Your next graded attempt is "
                          f"possible from "
                          f"{Policy.next_attempt(when):%Y-%m-%d %H:%M} UTC.", policy)
            return
        results = {}
        for nb, path in notebooks.items():
            if stored.get(nb) is not None:
                results[nb] = stored[nb]
                continue
            if not path.is_file():
                self._grading_error(row, f"{nb}.ipynb is missing from the submission")  # cannot be: intake read it
                return
            started = time.monotonic()
            result = self.grader.grade(row.assignment, path, settings)
            if not is_stored_score(result):
                # Measured here, not read from the result: a grading that used its whole time limit.
                limit = time_limit(row.assignment, self.settings)
                if time.monotonic() - started >= limit:
                    self._timed_out(row, limit, result.get("grading_error") or "no result")
                else:
                    self._grading_error(row, result.get("grading_error") or "no result")
                return
            keep_result(self.store, row.assignment, keys[nb], result)
            results[nb] = result
        if not self.queue.record_grading(row, self.me, _scores(results)):
            # Our lease ran out (this host was frozen, or cut off from the database) and another
            # host took the row: it finds the stored result; nothing is counted or published twice.
            log.warning("%s was taken back while it was graded here; its result is stored for the host that "
                        "took it", row.folder)
            return
        self._graded(row, policy, results, outcome="graded", counted=True, graded=True)

    # ------------------------------------------------------------------ closing a row
    def _publish_all(self, row: Row, page_of) -> None:
        for nb, name in row.feedback_names.items():
            publish(self.feedback, name, page_of(nb))

    def _finish(self, row: Row, state: str, outcome: str | None, **values) -> None:
        """Close the row, then remove the service's copy of its folder (its results are stored:
        nothing reads the copy again; the exchange's folder stays for the final grading)."""
        if self.queue.finish(row, self.me, state, outcome, **values):
            shutil.rmtree(copy_folder(self.course) / row.folder, ignore_errors=True)

    def _graded(self, row: Row, policy: Policy, results: dict, outcome: str, counted: bool, graded: bool) -> None:
        show_scores = policy.feedback == "scores"
        deadline = _deadline(policy, row)
        if policy.feedback == "none":
            self._publish_all(row, lambda nb: pages.receipt_page(
                row.assignment, row.submitted_at, f"Feedback before the deadline is off for {row.assignment}.",
                deadline))
        else:
            attempts = pages.attempts_note(self.queue.attempts_used(row), policy.attempts_per_day, counted,
                                           row.submitted_at)
            self._publish_all(row, lambda nb: pages.graded_page(row.assignment, row.submitted_at, results[nb],
                                                                show_scores, attempts, deadline))
        self._finish(row, DONE, outcome, counted=counted, scores=_scores(results))

    def _receipt(self, row: Row, outcome: str, why: str, policy: Policy) -> None:
        deadline = _deadline(policy, row)
        self._publish_all(row, lambda nb: pages.receipt_page(row.assignment, row.submitted_at, why, deadline))
        self._finish(row, DONE, outcome)

    def _mistake(self, row: Row, folder: Path, why: str) -> None:
        """The student's own mistake (mistakes.py): their page says what, under the names of the
        notebooks they submitted too (nbgrader's fetch_feedback looks for those); not retried, no
        attempt used, the staff not told."""
        log.warning("NOT GRADED %s: the student's mistake: %s", row.folder, why)
        page = pages.mistake_page(row.assignment, row.submitted_at, why)
        names = {**feedback_names(folder, found_notebooks(folder)), **row.feedback_names}
        for name in dict.fromkeys(names.values()):
            publish(self.feedback, name, page)
        self._finish(row, DONE, "mistake", error=why[:2000])

    def _timed_out(self, row: Row, limit: int, why: str) -> None:
        """A grading killed at its time limit: final (the same notebook would hold a worker as
        long again), the attempt it took stays used, and the same program is not graded again
        before the deadline (TIMED_OUT_BEFORE)."""
        log.error("TIMED OUT %s after %d s: %s", row.folder, limit, why)
        try:
            self._publish_all(row, lambda nb: pages.timed_out_page(row.assignment, row.submitted_at, limit))
        finally:
            self._finish(row, GRADING_ERROR, "timed_out", counted=True, error=why[:2000])

    def _grading_error(self, row: Row, why: str, retry: bool = True) -> None:
        if retry and row.attempts < GRADING_TRIES:
            log.warning("grading %s failed (try %d of %d; trying again): %s", row.folder, row.attempts,
                        GRADING_TRIES, why)
            self.queue.retry(row, self.me, why[:2000], RETRY_AFTER_SECONDS * row.attempts)
            return
        log.error("GRADING ERROR %s: %s", row.folder, why)
        try:
            self._publish_all(row, lambda nb: pages.error_page(row.assignment, row.submitted_at))
        finally:
            self._finish(row, GRADING_ERROR, None, error=why[:2000])


def _deadline(policy: Policy, row: Row) -> str:
    """The page's line on the student's own deadline (policy: already for_student)."""
    return pages.deadline_note(policy.due, policy.extended_from, policy.closes, policy.zone, row.submitted_at)


def _scores(results: dict) -> dict:
    """{task: [score, points]} over every notebook's result."""
    return {task: [graded["score"], graded["points"]] for result in results.values()
            for task, graded in result["tasks"].items()}
