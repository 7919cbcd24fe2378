"""The grading service's queue (service/queue.py) on a real SQLite database, and what `course
status` and `course report` compute from its rows (service/stats.py): cheap, no grading."""
from __future__ import annotations

import datetime
import json
import subprocess
import sys
import textwrap
import time

import pytest

from course_tools.service import heartbeat
from course_tools.service.queue import DONE, GRADING, GRADING_ERROR, QUEUED, Queue, claimant
from course_tools.service.stats import attempts, held_up_longest, queue_summary

T0 = datetime.datetime(2026, 12, 2, 9, 0, 0)


def _queue(tmp_path) -> Queue:
    return Queue(f"sqlite:///{tmp_path}/gradebook.db")


def _enqueue(queue: Queue, n: int, student: str = "ada", fingerprint: str | None = None):
    return queue.enqueue("01_forward_ops", student, f"{student}+01_forward_ops+{n}", T0 + datetime.timedelta(seconds=n),
                         fingerprint or f"f{n}", {"01_forward_ops": f"{n}.html"})


def test_enqueue_is_idempotent_and_claims_go_oldest_first_to_one_claimant(tmp_path):
    queue = _queue(tmp_path)
    first, second = _enqueue(queue, 1), _enqueue(queue, 2)
    assert first is not None and second is not None
    assert _enqueue(queue, 1) is None and len(queue.rows()) == 2    # the same inbound folder: no second row
    me = claimant()
    row = queue.claim(me, lambda r: 60)
    assert (row.id, row.state, row.attempts) == (first, GRADING, 1)
    assert queue.claim(me, lambda r: 60).id == second and queue.claim(me, lambda r: 60) is None
    assert queue.finish(row, "someone-else:1:x", DONE, "graded") is False   # not theirs: nothing written
    assert queue.finish(row, me, DONE, "graded") is True
    assert [r["state"] for r in queue.rows()] == [DONE, GRADING]
    queue.close()


def test_a_row_whose_claimant_died_is_put_back_and_a_live_ones_is_not(tmp_path):
    queue = _queue(tmp_path)
    _enqueue(queue, 1), _enqueue(queue, 2)
    dead = subprocess.run([sys.executable, "-c", "from course_tools.service.queue import claimant; print(claimant())"],
                          capture_output=True, text=True, check=True).stdout.strip()   # a process that has exited
    me = claimant()
    queue.claim(dead, lambda r: 3600)
    queue.claim(me, lambda r: 3600)
    assert queue.reclaim(me) == 1
    assert [(r["state"], r["claimed_by"]) for r in queue.rows()] == [(QUEUED, None), (GRADING, me)]
    again = queue.claim(me, lambda r: 3600)
    assert again.attempts == 2     # claimed a second time: the restart's grading
    queue.close()


LIVE = "from course_tools.service.queue import claimant; print(claimant(), flush=True); import time; time.sleep(600)"


def test_a_pid_a_student_got_after_the_service_died_does_not_keep_its_rows_and_the_lease_decides(tmp_path):
    """After kill -9, a student can fork until a child gets the dead service's pid: a claimant
    is that pid *and* its start time, so the row goes back. A claimant alive on this machine
    holds its row only until its lease ends (a grading is killed well before)."""
    queue = _queue(tmp_path)
    for n in range(3):
        _enqueue(queue, n)
    dead = subprocess.run([sys.executable, "-c", "from course_tools.service.queue import claimant; print(claimant())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    live = subprocess.Popen([sys.executable, "-c", LIVE], stdout=subprocess.PIPE, text=True)
    try:
        living = live.stdout.readline().strip()
        host, pid = living.split(":")[:2]
        assert dead.split(":")[0] == host and dead.split(":")[1] != pid
        recycled = ":".join([host, pid, *dead.split(":")[2:]])   # the dead claimant, its pid now another process's
        me = claimant()
        queue.claim(recycled, lambda r: 3600)
        queue.claim(living, lambda r: 3600)
        queue.claim(living, lambda r: -1)      # its lease ran out a second ago
        assert queue.reclaim(me) == 2
        assert [(r["state"], r["claimed_by"]) for r in queue.rows()] == [(QUEUED, None), (GRADING, living),
                                                                        (QUEUED, None)]
    finally:
        live.kill()
        live.wait()
    assert queue.reclaim(me) == 1               # and once it has exited, its row too
    queue.close()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_claims_take_students_in_turn_so_a_backlog_never_holds_a_classmate_back(tmp_path, database, request):
    """One student's 20 queued submissions, then a classmate's first and a third student's: the
    classmates are claimed within the next two claims, not after the backlog, and the pending
    pages' order (waiting) is the order of the claims."""
    db_url = f"sqlite:///{tmp_path}/gradebook.db" if database == "sqlite" else request.getfixturevalue("postgres_url")
    queue = Queue(db_url)
    flood = [_enqueue(queue, n, student="mallory") for n in range(20)]
    ben, cleo = _enqueue(queue, 20, student="ben"), _enqueue(queue, 21, student="cleo")
    me = claimant()
    assert queue.claim(me, lambda r: 60).id == flood[0]        # mallory's first, as she came first
    projected = [r.id for r in queue.waiting() if r.state == QUEUED]
    claimed = [queue.claim(me, lambda r: 60).id for _ in range(21)]
    assert claimed[:2] == [ben, cleo] and claimed[2:] == flood[1:] and claimed == projected
    queue.close()


CLAIMER = textwrap.dedent("""
    import json, sys
    from course_tools.service.queue import Queue, claimant
    queue, me, got = Queue(sys.argv[1]), claimant(), []
    while (row := queue.claim(me, lambda r: 600)) is not None:
        got.append(row.id)
    print(json.dumps(got))
""")


def test_four_processes_claiming_one_sqlite_queue_at_once_never_share_a_row(tmp_path):
    queue = _queue(tmp_path)
    ids = [_enqueue(queue, n, student=f"s{n % 7}") for n in range(60)]
    queue.close()
    url = f"sqlite:///{tmp_path}/gradebook.db"
    claimers = [subprocess.Popen([sys.executable, "-c", CLAIMER, url], stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    got = [json.loads(p.communicate(timeout=300)[0]) for p in claimers]
    assert all(p.returncode == 0 for p in claimers)
    claimed = [i for ids_of_one in got for i in ids_of_one]
    assert sorted(claimed) == sorted(ids)            # every row claimed, none twice
    assert all(r["attempts"] == 1 for r in Queue(url).rows())


def _row(student, state, submitted, finished, scores=None, outcome="graded"):
    return {"student": student, "assignment": "a", "folder": f"{student}{submitted}", "state": state,
            "outcome": outcome, "submitted_at": T0 + datetime.timedelta(seconds=submitted),
            "finished_at": None if finished is None else T0 + datetime.timedelta(seconds=finished),
            "scores": json.dumps(scores) if scores else None, "error": "boom" if state == GRADING_ERROR else None}


def test_status_counts_and_todays_waits_and_report_attempts_to_full_marks():
    full, half = {"t1": [2, 2], "t2": [1, 1]}, {"t1": [0, 2], "t2": [1, 1]}
    rows = [_row("ada", DONE, 0, 10, half), _row("ada", DONE, 100, 130, half), _row("ada", DONE, 200, 220, full),
            _row("ben", DONE, 0, 40, full), _row("cleo", DONE, 5, 15, half), _row("cleo", QUEUED, 300, None),
            _row("dan", GRADING_ERROR, 7, 9), _row("eve", DONE, 8, 9, outcome="over_limit")]
    summary = queue_summary(rows, now=T0 + datetime.timedelta(hours=1))
    assert (summary["waiting"], summary["grading"], summary["done"], summary["errors"]) == (1, 0, 6, 1)
    # waits of the done rows: 10, 30, 20, 40, 10, 1 s -> median (lower) 10, p95 40
    assert (summary["median_wait"], summary["p95_wait"]) == (10, 40)
    assert [r["student"] for r in summary["error_rows"]] == ["dan"]
    found = attempts(rows)
    assert found["per_student"] == {"ada": 3, "ben": 1, "cleo": 1}     # over_limit and errors are no attempt
    assert found["per_task"]["t1"] == {"to_full": [3, 1], "never": 1}   # ada on her third, ben first, cleo never
    assert found["per_task"]["t2"] == {"to_full": [1, 1, 1], "never": 0}
    assert held_up_longest(found["per_task"]) == "t1"


def test_a_dead_hosts_rows_go_back_one_lease_after_its_last_heartbeat_and_it_is_named_dead(tmp_path):
    """Two hosts (claimants with other host names: only the lease can tell whether they live).
    The live one's heartbeat renews its row's lease, never past the grading's hold; the dead
    one's row goes back once its lease ran out, counted on its host row, which is named DEAD; a
    late result of the dead host counts nothing."""
    queue = _queue(tmp_path)
    _enqueue(queue, 1, "ada"), _enqueue(queue, 2, "ben")
    live, dead, me = "host-a:101:5:aaaa", "host-b:202:6:bbbb", claimant()
    heartbeat.register(queue, live, 2, 1)
    heartbeat.register(queue, dead, 2, 1)
    theirs = queue.claim(dead, lambda r: 2)
    ours = queue.claim(live, lambda r: 2)
    assert queue.reclaim(me) == 0                        # both leases run
    for _ in range(4):                                   # 2 s: past the first lease; only the live host beats
        time.sleep(0.5)
        assert heartbeat.beat(queue, live, 2, lambda assignment: 3600) == 1
    assert queue.reclaim(me) == 1
    state = {r["student"]: (r["state"], r["claimed_by"]) for r in queue.rows()}
    assert state == {"ada": (QUEUED, None), "ben": (GRADING, live)}
    assert queue.record_grading(theirs, dead, {"t": [1, 1]}) is False      # taken: nothing counted
    assert queue.finish(theirs, dead, DONE, "graded") is False
    assert queue.record_grading(ours, live, {"t": [1, 1]}) is True
    # The renewal never goes past the hold (the grading's own limit and slack) after the claim.
    heartbeat.beat(queue, live, 3600, lambda assignment: 1)
    (ben,) = [r for r in queue.rows() if r["student"] == "ben"]
    assert ben["lease_until"] <= ben["started_at"] + datetime.timedelta(seconds=1)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    found = {h.host: h for h in heartbeat.grading_hosts(queue)}
    assert found["host-b"].dead(now) and found["host-b"].reclaimed == 1
    assert not found["host-a"].dead(now) and found["host-a"].reclaimed == 0
    assert "DEAD host host-b (pid 202): last seen" in found["host-b"].line(now)
    assert "1 of its rows reclaimed" in found["host-b"].line(now)
    heartbeat.stopped(queue, live)
    later = now + datetime.timedelta(seconds=60)
    assert not [h for h in heartbeat.grading_hosts(queue) if h.host == "host-a"][0].dead(later)   # stopped, not dead
    queue.close()


def test_the_lease_setting_is_checked(monkeypatch):
    from course_tools.service.hosts import DEFAULT_LEASE_SECONDS, lease_seconds

    monkeypatch.delenv("COURSE_SERVICE_LEASE_SECONDS", raising=False)
    assert lease_seconds() == DEFAULT_LEASE_SECONDS
    monkeypatch.setenv("COURSE_SERVICE_LEASE_SECONDS", "8")
    assert lease_seconds() == 8
    for bad in ("1", "ten", "-5"):
        monkeypatch.setenv("COURSE_SERVICE_LEASE_SECONDS", bad)
        with pytest.raises(ValueError, match="COURSE_SERVICE_LEASE_SECONDS must be a whole number"):
            lease_seconds()
