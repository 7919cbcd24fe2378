"""The pending pages of a course served by several hosts are one host's job (hosts.publisher):
two `Service` objects of one course (two hosts, registered as `course serve` registers them) on
one database, their page writes counted (serve.py's publish wrapped, still writing). Cheap: no
grading, no service process; on SQLite and on PostgreSQL (the multi-host deployment)."""
from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
import time

import pytest

from course_tools.course_dir import init_course
from course_tools.grading.settings import GradingSettings
from course_tools.service import heartbeat, serve
from course_tools.service.intake import copy_folder
from course_tools.service.policy import Policy
from course_tools.service.publish import feedback_folder
from course_tools.service.hosts import hosts
from course_tools.service.queue import DONE, Queue, claimant, submissions
from course_tools.service.worker import Worker

A = "01_forward_ops"
T0 = datetime.datetime(2026, 12, 2, 9, 30)
LEASE = 2   # hosts.MIN_LEASE_SECONDS: a dead host is known after 2 s


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(tmp_path_factory, request):
    """A course per database, its gradebook made once (nbgrader's tables take seconds)."""
    base = tmp_path_factory.mktemp(request.param)
    db_url = None
    if request.param == "postgresql":
        db_url = request.getfixturevalue("postgres_server").create_database("test_publisher")
    course = init_course(base / "course", "demo", base / "exchange", db_url)
    course.create_gradebook()
    return course


@pytest.fixture
def course(served):
    """The module's course with no queued row, no host and no page."""
    queue = Queue(served.db_url)
    with queue.engine.begin() as conn:
        conn.execute(submissions.delete())
        conn.execute(hosts.delete())
    queue.close()
    shutil.rmtree(feedback_folder(served.exchange, served.course_id), ignore_errors=True)
    return served


@pytest.fixture
def writes(monkeypatch) -> dict:
    """{feedback file name: times serve.py published it}, as it happens."""
    counted: dict[str, int] = {}
    real = serve.publish

    def publish(folder, name, page):
        counted[name] = counted.get(name, 0) + 1
        return real(folder, name, page)

    monkeypatch.setattr(serve, "publish", publish)
    return counted


def _hosts(course, n: int) -> list[serve.Service]:
    """``n`` services of ``course``, registered in this order (the first started first), each
    named as a process of another machine (one process here: only their leases tell them dead)."""
    services = [serve.Service(course, 1, GradingSettings()) for _ in range(n)]
    for k, service in enumerate(services):
        service.me = f"host-{k}:{101 + k}:5:{k:08x}"
        heartbeat.register(service.queue, service.me, LEASE, 1)
        time.sleep(0.01)   # distinct start times
    return services


def _backlog(queue, n: int) -> list[str]:
    """``n`` queued submissions of ``n`` students; their feedback files' names, in claim order."""
    for k in range(n):
        queue.enqueue(A, f"s{k}", f"s{k}+{A}+{k}", T0, f"{k:064x}", {A: f"s{k}.html"})
    return [f"s{k}.html" for k in range(n)]


def _refresh(service, writes: dict) -> int:
    """Pages that ``service``'s refresh published."""
    writes.clear()
    service._show_pending()
    return sum(writes.values())


def _close(services) -> None:
    for service in services:
        service.queue.close()


def test_only_the_first_live_host_publishes_pending_pages_and_another_takes_over_one_lease_after_it_died(
        course, writes):
    first, second = hosts = _hosts(course, 2)
    try:
        names = _backlog(first.queue, 6)
        assert _refresh(second, writes) == 0          # not its job while the first lives
        assert _refresh(first, writes) == 6 and set(writes) == set(names)
        assert _refresh(first, writes) == 0           # nothing moved: nothing rewritten
        me = claimant()
        first.queue.finish(first.queue.claim(me, lambda row: 60), me, DONE, "graded")
        assert _refresh(first, writes) == 5 and _refresh(second, writes) == 0   # every place moved up one
        # The first host's heartbeat stops (kill -9); the second beats on. Within its lease
        # nothing changes; past it, the second publishes every page and the first none.
        died = time.monotonic()
        while time.monotonic() - died < LEASE + 0.6:
            heartbeat.beat(second.queue, second.me, LEASE, lambda assignment: 3600)
            if time.monotonic() - died < LEASE - 0.5:
                assert _refresh(second, writes) == 0
            time.sleep(0.25)
        assert _refresh(second, writes) == 5 and set(writes) == set(names[1:])
        assert _refresh(first, writes) == 0           # its late beat lost it the job
        page = (feedback_folder(course.exchange, course.course_id) / names[1]).read_text()
        assert "it is next" in page
    finally:
        _close(hosts)


def test_a_host_that_stops_hands_the_pages_over_at_once_and_a_later_host_never_takes_them(course, writes):
    first, second, third = hosts = _hosts(course, 3)
    try:
        _backlog(first.queue, 4)
        assert [_refresh(h, writes) for h in hosts] == [4, 0, 0]
        heartbeat.stopped(first.queue, first.me)
        assert [_refresh(h, writes) for h in hosts] == [0, 4, 0]
    finally:
        _close(hosts)


def test_one_host_alone_publishes_every_pending_page_registered_or_not(course, writes):
    (alone,) = hosts = _hosts(course, 1)
    unregistered = serve.Service(course, 1, GradingSettings())
    try:
        _backlog(alone.queue, 5)
        assert _refresh(alone, writes) == 5
        heartbeat.stopped(alone.queue, alone.me)      # no host lives: whoever refreshes publishes
        assert _refresh(unregistered, writes) == 5
    finally:
        _close([*hosts, unregistered])


def test_a_host_that_does_not_publish_pending_pages_still_publishes_the_page_of_a_row_it_closes(course):
    first, second = hosts = _hosts(course, 2)
    try:
        (name,) = _backlog(first.queue, 1)
        (copy_folder(course) / f"s0+{A}+0").mkdir(parents=True)
        closed = Policy(closes=T0 - datetime.timedelta(hours=1))   # the late window ended before it came
        worker = Worker(course, second.queue, GradingSettings(), lambda assignment: closed, second.me, grader=None)
        assert worker.work_one()
        page = (feedback_folder(course.exchange, course.course_id) / name).read_text()
        assert "late window of 01_forward_ops ended" in page
    finally:
        _close(hosts)


def test_a_dead_predecessor_on_this_machine_hands_the_pages_over_at_once(course, writes):
    """A host of this machine killed (kill -9: its row still fresh, never stopped) is known dead
    by its pid: a service started after it publishes at once, not one lease later."""
    dead = subprocess.run([sys.executable, "-c", "from course_tools.service.queue import claimant; print(claimant())"],
                          capture_output=True, text=True, check=True).stdout.strip()   # a process that has exited
    successor = serve.Service(course, 1, GradingSettings())
    try:
        heartbeat.register(successor.queue, dead, 3600, 1)
        time.sleep(0.01)
        heartbeat.register(successor.queue, successor.me, 3600, 1)
        _backlog(successor.queue, 3)
        assert _refresh(successor, writes) == 3
    finally:
        _close([successor])


def test_a_page_waits_while_another_process_holds_the_publishing_lock(course, tmp_path):
    """The pending pages' look-then-publish is one step across hosts, not only across threads:
    while another process (another host of the course) holds PUBLISHING, this one's publish waits,
    so its final page lands after, never under, a "waiting" page computed before it."""
    import threading

    from course_tools.service.publish import PUBLISHING, publish

    folder = feedback_folder(course.exchange, course.course_id)
    held, release = tmp_path / "held", tmp_path / "release"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, pathlib\n"
        "from course_tools.service.publish import PUBLISHING\n"
        "folder, held, release = map(pathlib.Path, sys.argv[1:])\n"
        "with PUBLISHING(folder):\n"
        "    held.touch()\n"
        "    while not release.exists(): time.sleep(0.02)\n"
    ), str(folder), str(held), str(release)])
    try:
        deadline = time.monotonic() + 30
        while not held.exists():
            assert holder.poll() is None and time.monotonic() < deadline, "the holder did not take the lock"
            time.sleep(0.02)
        done = threading.Event()
        writer = threading.Thread(target=lambda: (publish(folder, "final.html", "final"), done.set()))
        writer.start()
        assert not done.wait(1.0), "published while another process held the lock"
        assert not (folder / "final.html").exists()
        release.touch()
        assert done.wait(30) and (folder / "final.html").read_text() == "final"
        writer.join()
    finally:
        release.touch()
        holder.wait(30)
    with PUBLISHING(folder), PUBLISHING(folder):   # re-entrant within a process
        publish(folder, "again.html", "again")
    assert oct((folder / ".publishing.lock").stat().st_mode & 0o777) == "0o600"
