"""A deadline burst through two grading hosts, one killed with kill -9 mid-way (issue 43).

    .venv/bin/python benchmarks/bench_hosts.py                       # 1,000 submissions, 20 distinct notebooks
    .venv/bin/python benchmarks/bench_hosts.py --submissions 200 --distinct 10 --lease 10 --kill-at 0.3

A throwaway PostgreSQL server (tests/postgres_server.py) holds a fresh course's gradebook and
queue; 01_forward_ops is released; ``--submissions`` students each drop one submission into the
exchange's inbound/ at once (``--distinct`` notebooks among them: the filled-in release, the
blank one and the planted mistake, each made a program of its own; the rest are copies, which
the service grades once and reuses). Two `course serve` hosts (tests/service_support.py's
serve_as_host: each its own UTS and network namespace, host name, process tree and $TMPDIR, ``--workers``
each, COURSE_SERVICE_LEASE_SECONDS=``--lease``) drain it; once ``--kill-at`` of the rows are
done and host b holds a leased row, host b's whole process tree is killed with SIGKILL. The
other takes its rows back one lease later.

Printed (JSON): the drain time from the burst to the last row done, the time after the kill,
rows per second, how many rows the killed host held, and the exactly-once checks: every row
done, one row per student, each distinct notebook graded once (the rows' ``gradings``), no row
claimed more than twice and only the killed host's rows twice. Exits 1 when a check fails.
Needs root (unshare --uts), bubblewrap and PostgreSQL's server programs. Run it on a quiet
machine (`uptime` below 2 on 2 cores): the numbers are the machine's, not the service's, otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from postgres_server import PostgresServer  # noqa: E402
from service_support import (ASSIGNMENT, blank, drop, filled_release, released_course, rows, serve_as_host,  # noqa: E402
                             variant, wait_for, with_mistake)

KINDS = (filled_release, blank, with_mistake)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--distinct", type=int, default=20, help="distinct notebooks among the submissions")
    parser.add_argument("--workers", type=int, default=1, help="grading workers per host")
    parser.add_argument("--lease", type=int, default=10, help="COURSE_SERVICE_LEASE_SECONDS of both hosts")
    parser.add_argument("--kill-at", type=float, default=0.5, help="share of rows done when host b is killed")
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="bench-hosts-"))
    with PostgresServer(base / "pg") as server:
        server.create_database("bench")
        db_url = server.socket_url("bench")   # the hosts have no network (serve_as_host)
        demo = released_course(base, db_url=db_url)
        roots = {name: Path(tempfile.mkdtemp(prefix=f"course-{name}-", dir="/tmp")) for name in ("a", "b")}
        hosts = {name: serve_as_host(demo, f"grading-{name}", root, base / f"{name}.log", args.lease,
                                     "--workers", str(args.workers), "--rescan", "2") for name, root in roots.items()}
        try:
            notebooks = [variant(KINDS[j % 3](ASSIGNMENT), f"bench-{j}") for j in range(args.distinct)]
            started = time.monotonic()
            for i in range(args.submissions):
                drop(demo, f"s{i:04d}", notebooks[i % args.distinct])
            dropped = time.monotonic() - started

            def kill_due():
                now = rows(demo, db_url)
                done = sum(r["state"] == "done" for r in now)
                held = [r for r in now if r["state"] == "grading" and r["claimed_by"].startswith("grading-b:")]
                return held if held and done >= args.kill_at * args.submissions else None

            wait_for(kill_due, args.timeout, "host b grading mid-way", every=0.2)
            os.killpg(hosts["b"].pid, signal.SIGKILL)
            hosts["b"].wait(timeout=60)
            killed = time.monotonic()
            held = [r["id"] for r in rows(demo, db_url)
                    if r["state"] == "grading" and r["claimed_by"].startswith("grading-b:")]
            wait_for(lambda: len(rows(demo, db_url)) == args.submissions and all(
                r["state"] in ("done", "grading_error") for r in rows(demo, db_url)), args.timeout, "drained", every=1)
            drained = time.monotonic()
            hosts["a"].send_signal(signal.SIGTERM)
            hosts["a"].wait(timeout=120)
        finally:
            for process in hosts.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=60)
            for root in roots.values():
                subprocess.run(["rm", "-rf", "--one-file-system", str(root)], check=False)
        final = rows(demo, db_url)
    checks = {
        "every row done": all(r["state"] == "done" for r in final) and len(final) == args.submissions,
        "one row per student": len({r["student"] for r in final}) == args.submissions,
        "each distinct notebook graded once": sum(r["gradings"] for r in final) == args.distinct,
        "only the killed host's rows claimed twice": all(r["attempts"] == (2 if r["id"] in held else 1) for r in final),
        "the killed host held a row": bool(held),
    }
    report = {"submissions": args.submissions, "distinct": args.distinct, "workers_per_host": args.workers,
              "lease_s": args.lease, "dropped_in_s": round(dropped, 1), "drain_s": round(drained - started, 1),
              "after_kill_s": round(drained - killed, 1),
              "rows_per_s": round(args.submissions / (drained - started), 2), "rows_taken_back": len(held),
              "by_host": {h: sum(r["claimed_by"].startswith(f"grading-{h}:") for r in final) for h in ("a", "b")},
              "checks": checks, "load_at_end": os.getloadavg()}
    print(json.dumps(report, indent=2))
    subprocess.run(["rm", "-rf", str(base)], check=False)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
