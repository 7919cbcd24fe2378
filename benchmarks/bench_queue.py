"""The course's grading queue alone: how many claims and completions a second it hands out.

    .venv/bin/python benchmarks/bench_queue.py                            # PostgreSQL and SQLite, 1 2 8 32 claimers
    .venv/bin/python benchmarks/bench_queue.py --db postgres --claimers 8 32 --rows 1280 --history 10000
    .venv/bin/python benchmarks/bench_queue.py --service                  # + the worker's other transactions per row

No grading runs. A fresh database (a throwaway PostgreSQL server as the tests start one,
tests/postgres_server.py, or an SQLite file) gets ``--rows`` queued submissions (one notebook
each, distinct fingerprints, two per student) and, with ``--history N``, N closed rows before
them (a term's earlier deadlines: ``claim`` reads the whole table to put students in turn).
Then ``--claimers`` processes, released together, each loop on the real queue API
(course_tools/service/queue.py): ``claim`` -> (``--sleep`` seconds, standing in for the grading;
with ``--service`` also the transactions the service's worker makes for a graded row:
``timed_out_before``, ``take_attempt``, ``record_grading``, ``attempts_used``) -> ``finish``,
until ``claim`` finds nothing. Printed per run: rows closed per second, database transactions
per second, claim latency p50/p99, and the exactly-once check: every row claimed by exactly one
process, once, and closed (the run fails otherwise).

The claimers, the database server and this script share the machine's cores: on a small
machine the numbers are what the queue can do while its clients compete with it for the CPU,
a lower bound for a database on a host of its own.
"""
from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from course_tools.service.queue import DONE, Queue, claimant  # noqa: E402

LEASE_SECONDS = 600
WORKER_TRANSACTIONS = ("claim", "timed_out_before", "take_attempt", "record_grading", "attempts_used", "finish")


def fill(db_url: str, rows: int, history: int) -> list[int]:
    """``history`` closed rows, then ``rows`` queued ones (two per student); the queued rows' ids."""
    queue = Queue(db_url)
    try:
        when = datetime.datetime(2026, 12, 1, 12, 0)
        for n in range(history):
            queue.enqueue("00_old", f"h{n // 4:05d}", f"h{n:06d}", when, f"{n:064x}", {"00_old": f"h{n}"},
                          state=DONE, outcome="graded")
        ids = []
        for n in range(rows):
            ids.append(queue.enqueue("01_forward_ops", f"s{n // 2:05d}", f"q{n:06d}", when,
                                     f"{n + history:064x}", {"01_forward_ops": f"q{n}"}))
        return ids
    finally:
        queue.close()


def claimer(db_url: str, start, out: str, sleep: float, service: bool) -> None:
    """Claim and close rows until none is queued; writes [[id, claim s, close s], ...] to ``out``."""
    queue = Queue(db_url, create=False)
    me = claimant()
    done = []
    start.wait()
    try:
        while True:
            t0 = time.perf_counter()
            row = queue.claim(me, lambda _row: LEASE_SECONDS)
            t1 = time.perf_counter()
            if row is None:
                break
            if sleep:
                time.sleep(sleep)
            t2 = time.perf_counter()
            scores = {"grading": [1.0, 1.0]}
            if service:
                queue.timed_out_before(row.fingerprint, row.id)
                queue.take_attempt(row, 100)
                queue.record_grading(row, scores)
                queue.attempts_used(row)
            if not queue.finish(row, me, DONE, "graded", counted=service, scores=scores):
                raise SystemExit(f"row {row.id} was no longer {me}'s when it was closed")
            done.append([row.id, t1 - t0, time.perf_counter() - t2])
    finally:
        queue.close()
        Path(out).write_text(json.dumps(done))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def read_seconds(db_url: str) -> dict:
    """Median seconds of the whole-table reads each service process makes whenever the queue
    moves (at most every 2 s: serve.py's pending pages): ``waiting`` (every queued and grading
    row, in claim order) and ``rows`` (the whole table, for the typical grading time)."""
    queue = Queue(db_url, create=False)
    try:
        out = {}
        for name, read in (("waiting", queue.waiting), ("rows", queue.rows)):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                read()
                times.append(time.perf_counter() - t0)
            out[name] = statistics.median(times)
        return out
    finally:
        queue.close()


def run(db_url: str, claimers: int, args, scratch: Path) -> dict:
    """One database, ``claimers`` processes: the numbers, after the exactly-once check."""
    ids = fill(db_url, args.rows, args.history)
    reads = read_seconds(db_url)
    context = multiprocessing.get_context("fork")
    start = context.Event()
    outs = [scratch / f"claimer-{claimers}-{i}.json" for i in range(claimers)]
    procs = [context.Process(target=claimer, args=(db_url, start, str(out), args.sleep, args.service))
             for out in outs]
    for proc in procs:
        proc.start()
    time.sleep(1.0)   # every claimer connected and waiting
    began = time.perf_counter()
    start.set()
    for proc in procs:
        proc.join()
    wall = time.perf_counter() - began
    if any(proc.exitcode != 0 for proc in procs):
        raise SystemExit(f"a claimer failed (exit codes {[proc.exitcode for proc in procs]})")
    handled = [entry for out in outs for entry in json.loads(out.read_text())]
    claimed = [entry[0] for entry in handled]
    queue = Queue(db_url, create=False)
    try:
        rows = {r["id"]: r for r in queue.rows() if r["assignment"] == "01_forward_ops"}
    finally:
        queue.close()
    twice = len(claimed) - len(set(claimed))
    missing = set(ids) - set(claimed)
    not_closed = [i for i, r in rows.items() if r["state"] != DONE or r["attempts"] != 1]
    if twice or missing or not_closed or set(claimed) != set(ids):
        raise SystemExit(f"EXACTLY-ONCE FAILED with {claimers} claimers: {twice} claimed twice, {len(missing)} "
                         f"never claimed, {len(not_closed)} not closed after one claim")
    per_row = len(WORKER_TRANSACTIONS) if args.service else 2
    claims = [entry[1] for entry in handled]
    return {"claimers": claimers, "rows": len(handled), "wall": wall, "rows_s": len(handled) / wall,
            "tx_s": per_row * len(handled) / wall, "p50": percentile(claims, .5), "p99": percentile(claims, .99),
            "close_p50": statistics.median(entry[2] for entry in handled), "reads": reads,
            "per_claimer": sorted(len(json.loads(out.read_text())) for out in outs)}


def durable(server) -> None:
    """Undo the test server's speed-ups (fsync, synchronous_commit and full_page_writes off): a
    course's database commits to disk. Server settings, not the queue's SQL."""
    from sqlalchemy import create_engine, text

    engine = create_engine(server.url("postgres"), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                conn.execute(text(f"ALTER SYSTEM SET {setting} = on"))
            conn.execute(text("SELECT pg_reload_conf()"))
            time.sleep(0.5)
            shown = {s: conn.execute(text(f"SHOW {s}")).scalar_one()
                     for s in ("fsync", "synchronous_commit", "full_page_writes")}
    finally:
        engine.dispose()
    if set(shown.values()) != {"on"}:
        raise SystemExit(f"PostgreSQL did not take the durable settings: {shown}")


def databases(kind: str, scratch: Path, server, name: str) -> str:
    if kind == "sqlite":
        return f"sqlite:///{scratch}/{name}.db"
    return server.create_database(name)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--claimers", type=int, nargs="+", default=[1, 2, 8, 32],
                        help="numbers of claiming processes, one run each (default 1 2 8 32)")
    parser.add_argument("--rows", type=int, default=640, help="queued rows each run drains (default 640)")
    parser.add_argument("--history", type=int, default=0,
                        help="closed rows already in the table (earlier deadlines; default 0)")
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds between claim and close (default 0)")
    parser.add_argument("--no-fsync", action="store_true",
                        help="PostgreSQL as the tests run it (fsync, synchronous_commit off); default: durable")
    parser.add_argument("--service", action="store_true",
                        help="also the worker's other transactions per graded row (6 in all, not 2)")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if min(args.claimers) < 1 or args.rows < 1 or args.history < 0 or args.sleep < 0:
        parser().error("--claimers and --rows must be at least 1, --history and --sleep at least 0")
    kinds = ["postgres", "sqlite"] if args.db == "both" else [args.db]
    print(f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f}; {args.rows} queued rows, "
          f"{args.history} closed before them; {'6 (the worker' + chr(39) + 's)' if args.service else '2'} "
          f"transactions per row; {args.sleep:g} s between claim and close"
          + ("" if "postgres" not in kinds else "; PostgreSQL " + ("without fsync (as in the tests)" if args.no_fsync
                                                                   else "durable (fsync, synchronous_commit on)")), flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-queue-") as scratch:
        server = None
        if "postgres" in kinds:
            from postgres_server import PostgresServer

            server = PostgresServer(Path(scratch)).start()
            if not args.no_fsync:
                durable(server)
        try:
            for kind in kinds:
                for n, claimers in enumerate(args.claimers):
                    result = run(databases(kind, Path(scratch), server, f"bench_{kind}_{n}"), claimers, args,
                                 Path(scratch))
                    result["db"] = kind
                    results.append(result)
                    print(f"  {kind:8s} {claimers:3d} claimers: {result['rows_s']:7.1f} rows/s, "
                          f"{result['tx_s']:7.1f} transactions/s, claim p50 {result['p50'] * 1000:6.1f} ms p99 "
                          f"{result['p99'] * 1000:7.1f} ms; exactly once: {result['rows']} rows, each claimed once "
                          f"(per claimer {result['per_claimer'][0]}-{result['per_claimer'][-1]}); before it, with "
                          f"{args.rows} queued: waiting() {result['reads']['waiting'] * 1000:.0f} ms, rows() "
                          f"{result['reads']['rows'] * 1000:.0f} ms; load average "
                          f"{os.getloadavg()[0]:.1f}", flush=True)
        finally:
            if server is not None:
                server.stop()
    print("\n| database | claimers | rows/s | transactions/s | claim p50 ms | claim p99 ms | close p50 ms "
          "| waiting() ms | rows() ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(f"| {r['db']} | {r['claimers']} | {r['rows_s']:.1f} | {r['tx_s']:.1f} | {r['p50'] * 1000:.1f} | "
              f"{r['p99'] * 1000:.1f} | {r['close_p50'] * 1000:.1f} | {r['reads']['waiting'] * 1000:.0f} | "
              f"{r['reads']['rows'] * 1000:.0f} |")
    print("every row claimed exactly once and closed, in every run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
