"""Several grading hosts on one course (issue 43): two `course serve` processes, each its own
process tree with its own host name (a UTS namespace: `unshare --uts`, then `hostname`), its own
network namespace (no network: PostgreSQL over its Unix socket, in a folder both see) and its
own sandbox root ($TMPDIR, where the job folders are made), on one real PostgreSQL course
whose course folder and exchange both see. A burst of 40 submissions; one host killed with
kill -9 (its whole process tree) while it holds a leased row; the other takes that row back
one lease later (COURSE_SERVICE_LEASE_SECONDS, short here), and every row is done exactly once."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from course_tools.build import release_notebook
from course_tools.demo_class import MISTAKE_BREAKS
from course_tools.grading.results import STORE_NAME
from course_tools.grading.suite.run import graded_tasks
from course_tools.service import heartbeat
from course_tools.service.queue import Queue
from grading_support import require_sandbox
from service_support import (ASSIGNMENT, blank, drop, filled_release, page_of, released_course, rows, serve_as_host,
                             variant, wait_for, with_mistake)

require_sandbox()
if subprocess.run(["unshare", "--uts", "--net", "true"], capture_output=True).returncode != 0:
    pytest.skip("unshare --uts --net does not work here (root is needed)", allow_module_level=True)

POINTS = graded_tasks(release_notebook(ASSIGNMENT))
LEASE = 6                         # seconds; the default is 60
KINDS = {"full": filled_release, "blank": blank, "mistake": with_mistake}
DISTINCT = 4                      # notebooks; 40 submissions of them: each graded once, the rest reused
BURST = 40


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _tree(pid: int) -> set[tuple[int, str]]:
    """``pid`` and every descendant, as (pid, start time): a pid reused later is not the same process."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        started = _start_time(p)
        if started is not None:
            found.add((p, started))
            todo += children.get(p, [])
    return found


def _still_running(tree: set[tuple[int, str]]) -> set[tuple[int, str]]:
    return {(p, s) for p, s in tree if _start_time(p) == s and
            Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()[0] != "Z"}


def _in_namespace(uts: str) -> list[int]:
    """Processes in the UTS namespace ``uts`` (one host's, and its children's but the sandboxes')."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "ns" / "uts") == uts:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _hosts(db_url: str) -> dict:
    queue = Queue(db_url)
    try:
        return {h.host: h for h in heartbeat.grading_hosts(queue)}
    finally:
        queue.close()


@pytest.mark.slow
def test_two_hosts_one_killed_with_kill_9_mid_burst_every_submission_is_graded_exactly_once(postgres_server, tmp_path,
                                                                                           capsys):
    from course_tools.cli import main as course

    # The course's database over PostgreSQL's Unix socket (in a folder every host sees): the hosts
    # have no network at all (each its own network namespace, nothing but a loopback left down).
    postgres_server.create_database("hosts")
    postgres_url = postgres_server.socket_url("hosts")
    demo = released_course(tmp_path, db_url=postgres_url)
    roots = {name: Path(tempfile.mkdtemp(prefix=f"course-{name}-", dir="/tmp")) for name in ("grading-a", "grading-b")}
    for root in roots.values():
        root.chmod(0o755)
    hosts = {name: serve_as_host(demo, name, root, tmp_path / f"{name}.log", LEASE, "--workers", "1", "--rescan", "1")
             for name, root in roots.items()}
    survivor, victim = hosts["grading-a"], hosts["grading-b"]
    try:
        t0 = time.monotonic()
        wait_for(lambda: set(_hosts(postgres_url)) == set(hosts), 60, "both hosts' heartbeat rows")
        found = _hosts(postgres_url)
        assert {n: found[n].pid for n in hosts} == {n: p.pid for n, p in hosts.items()}
        uts = {n: os.readlink(f"/proc/{p.pid}/ns/uts") for n, p in hosts.items()}
        assert len(set(uts.values())) == 2 and os.readlink("/proc/self/ns/uts") not in uts.values()
        net = {n: os.readlink(f"/proc/{p.pid}/ns/net") for n, p in hosts.items()}
        assert len(set(net.values())) == 2 and os.readlink("/proc/self/ns/net") not in net.values()

        # The burst: 40 students, 4 distinct notebooks (3 kinds), each student one submission.
        kinds = list(KINDS)
        notebooks = [(kinds[j % 3], variant(KINDS[kinds[j % 3]](ASSIGNMENT), f"burst-{j}")) for j in range(DISTINCT)]
        kind_of = {}
        for i in range(BURST):
            kind, nb = notebooks[i % DISTINCT]
            kind_of[drop(demo, f"s{i:02d}", nb)] = kind

        def victim_grading():
            now = rows(demo, postgres_url)
            held = [r for r in now if r["state"] == "grading" and r["claimed_by"].startswith("grading-b:")]
            return held if held and any(r["state"] == "done" for r in now) else None

        print(f"burst dropped at {time.monotonic() - t0:.1f} s")
        wait_for(victim_grading, 120, "host grading-b grading a row, mid-burst", every=0.1)
        victim_tree = _tree(victim.pid)
        os.killpg(victim.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        print(f"killed at {killed_at - t0:.1f} s, {sum(r['state'] == 'done' for r in rows(demo, postgres_url))} done")
        victim.wait(timeout=30)
        held = [r for r in rows(demo, postgres_url) if r["state"] == "grading"
                and r["claimed_by"].startswith("grading-b:")]
        assert held, "the killed host held no leased row"
        assert wait_for(lambda: not _still_running(victim_tree), 10, "the killed host's processes gone") is True

        def drained():
            now = rows(demo, postgres_url)
            return len(now) == BURST and all(r["state"] in ("done", "grading_error") for r in now)

        wait_for(drained, 150, "every submission done")
        drain_seconds = time.monotonic() - killed_at
        assert drain_seconds > LEASE * 0.8   # its rows waited for their lease (the other host could not tell before)

        survivor_tree = _tree(survivor.pid)
        survivor.send_signal(signal.SIGTERM)
        assert survivor.wait(timeout=60) == 0, (tmp_path / "grading-a.log").read_text()[-3000:]
        assert wait_for(lambda: not _still_running(survivor_tree), 15, "the stopped host's processes gone") is True
        assert not _in_namespace(uts["grading-a"]) and not _in_namespace(uts["grading-b"])
    finally:
        for process in hosts.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        leftovers = {name: sorted(p.name for p in root.iterdir()) for name, root in roots.items()}
        for root in roots.values():
            subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)
    # The stopped host's sandbox root is empty; the killed one's holds at most its job folder (and
    # multiprocessing's scratch folder).
    assert leftovers["grading-a"] == [] and all(n.startswith(("course-job-", "pymp-")) for n in leftovers["grading-b"]), leftovers

    final = rows(demo, postgres_url)
    # Every row done, exactly once: one row per student, each closed by one host, the rows the
    # killed host held claimed a second time by the other one, nothing else claimed twice.
    assert len({(r["student"], r["assignment"]) for r in final}) == BURST == len(final)
    assert all(r["state"] == "done" and r["error"] is None for r in final), [r["error"] for r in final]
    taken = {r["id"] for r in held}
    assert all(r["attempts"] == (2 if r["id"] in taken else 1) for r in final), [(r["id"], r["attempts"]) for r in final]
    assert all(r["claimed_by"].startswith("grading-a:") for r in final if r["id"] in taken)
    # Each distinct notebook graded once (the others found its stored result), one stored result each.
    assert sum(r["gradings"] for r in final) == DISTINCT
    assert sorted(r["outcome"] for r in final).count("graded") == DISTINCT
    stored = [p for p in (demo.course_dir / STORE_NAME / ASSIGNMENT).glob("*.json") if p.name != "grading-errors.json"]
    assert len(stored) == DISTINCT
    # The scores a one-host run gives the simulated class: full marks, zero, and the planted mistake.
    for row in final:
        scores = {task: score for task, (score, _) in json.loads(row["scores"]).items()}
        kind = kind_of[row["folder"]]
        if kind == "full":
            assert scores == POINTS, row["folder"]
        elif kind == "blank":
            assert set(scores) == set(POINTS) and not any(scores.values()), row["folder"]
        else:
            assert {t for t, s in scores.items() if s < POINTS[t]} == MISTAKE_BREAKS[ASSIGNMENT], row["folder"]
        assert "tasks pass" in page_of(demo, row)

    # `course status` names the dead host, and how many of its rows were taken back; the other stopped.
    capsys.readouterr()
    assert course(["status", "--course", str(demo.course_dir)]) == 0
    out = capsys.readouterr().out
    assert f"grading service (course serve): 0 waiting, 0 grading, {BURST} done, 0 grading errors" in out
    assert "grading hosts seen in the last 24 h: 2, 1 DEAD" in out
    assert f"DEAD host grading-b (pid {victim.pid}): last seen" in out
    assert f"{len(held)} of its rows reclaimed" in out
    assert f"host grading-a (pid {survivor.pid}): stopped at" in out
    print(f"drained {BURST} submissions {drain_seconds:.1f} s after the kill; {len(held)} row(s) taken back")
