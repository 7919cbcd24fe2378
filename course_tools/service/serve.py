"""`course serve`: the long-running grading service of one course folder.

    course serve [--workers N] [--rescan S] [--once] [--scheduler tcp://host:8786 | local | slurm [--adapt MIN:MAX]]

On start it puts back the rows a dead predecessor held (queue.reclaim), starts the grading
fork server (its imports take seconds; the first submission should not wait for them), scans
the exchange (intake.py: nothing submitted while it was down is missed), and then, until
stopped, scans again on every filesystem event under inbound/ (watcher.py) and every
``rescan`` seconds, while ``workers`` threads each claim and grade one submission at a time
(worker.py), each in its own process with its own time limit: one hanging submission holds one
worker, never the queue. Queued submissions' pages say where they are in the queue, refreshed
when the queue moves (at most every PENDING_REFRESH_SECONDS: in a rush, rewriting every queued
page after each grading would take the cores the gradings need), each rewritten only when its
text changed, and by one host of the course (hosts.publisher), not by each. ``--once`` stops when the
queue is empty (a batch, a benchmark, a test). Run by the hub as a service with a URL
(JUPYTERHUB_SERVICE_URL set), it also answers each student's own deadlines (deadline_api.py).

Several service processes (on one machine or several, on a PostgreSQL gradebook) may serve one
course: the queue's claim gives each row to one of them. Each writes a heartbeat (hosts.py)
every quarter of its lease (COURSE_SERVICE_LEASE_SECONDS), which renews the leases of the rows
it grades; a host that dies stops renewing them, and the others take them back one lease later.
"""
from __future__ import annotations

import datetime
import logging
import os
import signal
import statistics
import threading
import time

from course_student.words import plural

from ..course_dir import Course, CourseError
from ..exchange_folders import check_course, released_assignments
from ..grading.settings import GradingSettings
from ..terminal import log_to_terminal
from . import pages
from . import heartbeat
from .dispatch import dispatcher
from .hosts import lease_seconds
from .intake import LOOK_SECONDS, Intake
from .policy import policy_of
from .progress import Poster
from .publish import PUBLISHING, feedback_folder, publish
from .queue import QUEUED, Queue, claimant, utcnow
from .worker import Worker

log = logging.getLogger("course.serve")
DEFAULT_RESCAN_SECONDS = 10
PENDING_REFRESH_SECONDS = 2.0
TYPICAL_GRADING_SECONDS = 15.0   # the estimate before anything was graded today
FAILED_SCAN_PAUSE = 5.0          # after a scan or a claim that failed (each folder's own failure is caught inside)


class Service:
    def __init__(self, course: Course, workers: int, settings: GradingSettings,
                 rescan_seconds: float = DEFAULT_RESCAN_SECONDS, scheduler: str | None = None, adapt=None):
        # Adaptive: as many submissions sent at once as the cluster may grow to, so that a burst
        # is queued on Dask's scheduler, which asks for the workers.
        workers = max(workers, adapt.maximum) if adapt else workers
        self.course, self.workers, self.settings, self.rescan_seconds = course, max(1, workers), settings, rescan_seconds
        # nbgrader's tables first: a new database gets nbgrader's own creation (its alembic stamp),
        # and a `course release` run meanwhile finds them made instead of racing to make them.
        course.create_gradebook()
        self.queue = Queue(course.db_url)
        self.grader = dispatcher(settings, scheduler, self.workers, adapt)   # one Dask client shared by the workers
        self.me = claimant()
        try:
            self.lease = lease_seconds()
        except ValueError as err:
            raise CourseError(str(err)) from err
        # wake: look again (the queue moved, or inbound/ changed); changed: inbound/ changed (a scan
        # is due before the next rescan); work_ready: a row may be waiting for an idle worker.
        self.wake, self.changed = threading.Event(), threading.Event()
        self.work_ready, self.stop = threading.Event(), threading.Event()
        self._policies: dict = {}
        self._pending_shown: dict[int, str] = {}
        self._looks: dict = {}        # intake.py's looks at folders, from one scan to the next
        self.unsettled = 0            # folders the last scan left for a look soon
        self.feedback = feedback_folder(course.exchange, course.course_id)
        self.progress = Poster(course, self.queue) if _posts_progress(course) else None

    # ------------------------------------------------------------------ policy, per scan
    def _refresh_policies(self, assignments: list[str]) -> None:
        from nbgrader.api import MissingEntry

        dues = {}
        if self.course.gradebook_exists():
            with self.course.gradebook() as gradebook:
                for assignment in assignments:
                    try:
                        dues[assignment] = gradebook.find_assignment(assignment).duedate
                    except MissingEntry:
                        dues[assignment] = None
        # nbgrader_config.py is read afresh (Course caches what it read): an instructor's edit of
        # c.GradingService takes effect at the next scan, without a restart. An edit that does not
        # load (saved half-way) keeps the policies in force, once they were read.
        try:
            course = Course(self.course.root)
            self._policies = {a: policy_of(course, a, dues.get(a)) for a in assignments}
        except CourseError as err:
            if not all(a in self._policies for a in assignments):
                raise
            log.error("keeping the grading policy in force: %s", err)

    def policy(self, assignment: str):
        if assignment not in self._policies:
            self._refresh_policies([*self._policies, assignment])
        return self._policies[assignment]

    # ------------------------------------------------------------------ the loops
    def scan(self) -> int:
        # The exchange's folders are the grader's (a student who replaced the course's folder gets
        # every classmate's submission and page): ExchangeTakeover, a CourseError, ends the service.
        check_course(self.course.exchange, self.course.course_id)
        assignments = released_assignments(self.course)
        self._refresh_policies(assignments)
        back = self.queue.reclaim(self.me)
        if back:
            log.warning("put back %s whose grading process died", plural(back, "submission"))
        intake = Intake(self.course, self.queue, assignments, self.policy, self._looks)
        new = intake.scan()
        self.unsettled = intake.unsettled
        if new or back:
            self.work_ready.set()
            self._progress_due()
        self._show_pending()
        return len(new)

    def _show_pending(self) -> None:
        """Publish each queued submission's place in the queue (only where it changed), when this
        host is the one that publishes them (hosts.publisher: one live host of the course does;
        the others publish only the final pages of the rows they close). The look at the queue and
        the pages are one step under PUBLISHING, so that a row a worker closed meanwhile keeps its
        final page."""
        if not heartbeat.publishes_pending(self.queue, self.me):
            self._pending_shown = {}   # another host publishes meanwhile: what this one wrote is no guide
            return
        per_grading = self._typical_seconds()
        with PUBLISHING(self.feedback):
            waiting = self.queue.waiting()
            for ahead, row in enumerate(waiting):
                if row.state != QUEUED:
                    continue
                seconds = (ahead // self.workers + 1) * per_grading
                page = pages.pending_page(row.assignment, row.submitted_at, ahead, seconds,
                                          self.course.course_id or None)
                if self._pending_shown.get(row.id) == page:
                    continue
                for name in row.feedback_names.values():
                    publish(self.feedback, name, page)
                self._pending_shown[row.id] = page
        still = {row.id for row in waiting}
        self._pending_shown = {k: v for k, v in self._pending_shown.items() if k in still}

    def _typical_seconds(self) -> float:
        today = datetime.datetime.combine(utcnow().date(), datetime.time())
        spans = [(r["finished_at"] - r["started_at"]).total_seconds() for r in self.queue.rows()
                 if r["outcome"] == "graded" and r["finished_at"] and r["started_at"] and r["finished_at"] >= today]
        return statistics.median(spans) if spans else TYPICAL_GRADING_SECONDS

    def _work(self) -> None:
        worker = self._worker()
        while not self.stop.is_set():
            try:
                worked = worker.work_one()
            except Exception:  # noqa: BLE001 - the queue itself failed (a database away): try again, never end
                log.exception("the worker could not claim from the queue; trying again in %s s", FAILED_SCAN_PAUSE)
                self.stop.wait(FAILED_SCAN_PAUSE)
                continue
            if not worked:
                self.work_ready.wait(1.0)
                self.work_ready.clear()
            else:
                self.wake.set()   # the queue moved: refresh the pending pages
                self._progress_due()

    def _worker(self) -> Worker:
        return Worker(self.course, self.queue, self.settings, self.policy, self.me, self.grader, host_lease=self.lease)

    def _beat(self) -> None:
        """The heartbeat (hosts.py): this host seen, its rows' leases renewed, every quarter lease."""
        hold = self._worker().hold_seconds
        while not self.stop.wait(self.lease / 4):
            try:
                heartbeat.beat(self.queue, self.me, self.lease, hold)
            except Exception:  # noqa: BLE001 - a database away: its rows may be taken back, which is safe
                log.exception("the heartbeat could not reach the course database")

    def _progress_due(self) -> None:
        if self.progress is not None:
            self.progress.due.set()

    def _inbound_changed(self) -> None:
        self.changed.set()
        self.wake.set()

    def run(self, once: bool = False) -> int:
        from .watcher import watch

        inbound = self.course.exchange / self.course.course_id / "inbound"
        observer = None if once else watch(inbound, self._inbound_changed)
        heartbeat.register(self.queue, self.me, self.lease, self.workers)
        beat = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        beat.start()
        self.grader.warm_up()
        threads = [threading.Thread(target=self._work, name=f"grader-{i}", daemon=True) for i in range(self.workers)]
        for thread in threads:
            thread.start()
        if self.progress is not None:
            self.progress.start()
        log.info("serving %s (%s) with %s as %s", self.course.root, self.course.course_id,
                 plural(self.workers, "worker"), self.me)
        next_scan = next_pending = 0.0
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                try:
                    if once or self.changed.is_set() or now >= next_scan:
                        self.changed.clear()
                        next_scan, next_pending = now + self.rescan_seconds, now + PENDING_REFRESH_SECONDS
                        self.scan()   # shows the pending pages too
                        if self.unsettled:   # a folder still being written, or looked at once: look again soon
                            next_scan = min(next_scan, now + LOOK_SECONDS)
                    elif now >= next_pending:   # only the queue moved: its pages, not a scan of the exchange
                        next_pending = now + PENDING_REFRESH_SECONDS
                        self._show_pending()
                except CourseError:
                    raise   # the instructor's nbgrader_config.py never loaded: nothing to serve by
                except Exception:  # noqa: BLE001 - a failed scan is retried, it never ends the service
                    log.exception("the scan failed; trying again in %s s", FAILED_SCAN_PAUSE)
                    next_scan = min(next_scan, now + FAILED_SCAN_PAUSE)
                if once and not self.unsettled and not self.queue.waiting():
                    break
                self.wake.wait(1.0 if once else max(0.0, next_scan - time.monotonic()))
                self.wake.clear()
                time.sleep(0.2)   # let a burst of events settle into one scan
        finally:
            self.stop.set()
            self.work_ready.set()
            if observer is not None:
                observer.stop()
            for thread in threads:
                thread.join(timeout=5 if not once else None)
            if self.progress is not None:   # --once: what the last gradings changed is posted before the end
                self.progress.close(last_round=once)
            beat.join(timeout=5)
            try:
                heartbeat.stopped(self.queue, self.me)
            except Exception:  # noqa: BLE001 - a database away: the host is named dead after its lease instead
                log.exception("could not mark this host stopped in the course database")
            self.queue.close()
            self.grader.close()
        return 0


def _posts_progress(course: Course) -> bool:
    """Whether the course asks the service to post progress to the LMS (c.LMS.post_progress)."""
    from ..lms.registration import settings

    return bool(settings(course).post_progress)


def serve(course: Course, workers: int = 1, rescan_seconds: float = DEFAULT_RESCAN_SECONDS, once: bool = False,
          timeout: int | None = None, unsandboxed: bool = False, scheduler: str | None = None, adapt=None) -> int:
    log_to_terminal()  # folder names, grade ids and errors are the students' text: printed as escapes
    check_course(course.exchange, course.course_id)
    # The course folder: each submission is graded against the release version its locked cells match.
    settings = GradingSettings.current(unsandboxed=True if unsandboxed else None, notebook_seconds=timeout,
                                       course_root=course.root)
    # A hub service with a URL (hub/jupyterhub_config.py): students ask it for their own
    # deadlines. First, so that the hub finds the URL answering while the fork server warms up.
    if os.environ.get("JUPYTERHUB_SERVICE_URL") and not once:
        from .deadline_api import serve_in_thread

        serve_in_thread(course, os.environ["JUPYTERHUB_SERVICE_URL"], os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/"))
    try:
        service = Service(course, workers, settings, rescan_seconds, scheduler, adapt)
    except RuntimeError as err:   # no Dask, its scheduler cannot be reached, or a cluster that cannot start
        raise CourseError(str(err)) from err

    def _stop(signum, _frame):
        log.info("stopping (signal %d); a grading in progress is put back at the next start", signum)
        service.stop.set()
        service.wake.set()

    signal.signal(signal.SIGTERM, _stop)
    return service.run(once=once)
