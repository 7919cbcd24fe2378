"""What one grading does to the shared storage and the course database, counted, not guessed.

    .venv/bin/python benchmarks/bench_storage.py                     # 4 submissions of 04_conv_backward
    .venv/bin/python benchmarks/bench_storage.py --assignment 01_forward_ops --submissions 8

Two fresh courses (bench_service.py's set-up: `course init`, the assignment released). In the
first, `course serve --once --workers 1` runs with nothing submitted (the service's fixed cost:
start, scan, stop); in the second, with ``--submissions`` submissions from different students
dropped into the exchange's inbound/ first (bench_grading.py's mix: the filled-in release, a
realistic mistake, the blank release, a hostile notebook, in turn, each a program of its own, so
every one is a hidden-suite grading). Each run is under ``strace -f --seccomp-bpf`` (every process:
the service, its fork server, the gradings and their sandboxes), tracing the file system calls
(``%file``: open, stat, rename, unlink, mkdir...) and ``getdents64`` (directory listings), ``fsync``
and ``fdatasync``, with file descriptors shown as paths (``-y``). Each call is put under the part
of the storage its path is in: the exchange, the course folder (its database files apart), the
database (gradebook.db and its journal), or elsewhere (the installed packages, /tmp, /proc, the
sandbox's private view); within each, by kind (created or written, read, metadata, listed,
renamed, removed, made, synced). `--once` looks at the exchange every second until the queue is
empty (a running service every 10 s, and whenever inbound/ changes), so the calls are split: per
scan (measured apart: the service's own scan, Service.scan, run 20 times on the course after its
gradings, traced) and per submission (the second run's calls less the first's, less the
second's extra scans at that cost, over the submissions). The course database's transactions are counted the
same way, by a listener on every SQLAlchemy engine of the service process ("begin"), and so are
the calls of each method of the queue (wrapped in the service's process, not changed).

Calls that fail (a stat of a file not there) are counted too: on NFS each is a round trip. The
traced programs run in this checkout's folder (``python -c`` imports its course_tools first), so
they measure the code beside this script.

Then, on the second course: one pending page published 500 times as serve.py does (seconds and
file calls per page), and two service processes of that course (two hosts; `Service` objects,
registered as hosts, nothing graded) with ``--backlog`` rows queued: the pages each one's refresh
(`_show_pending`) publishes, before and after one row is graded (one host, the publisher of
hosts.py, writes them; the other none).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_service import MIX, drop, notebook, set_up  # noqa: E402
from course_lib.tasks import ASSIGNMENTS  # noqa: E402
from course_tools.build import tool_env  # noqa: E402
from course_tools.service.queue import Queue  # noqa: E402

TRACED = "%file,getdents64,fsync,fdatasync"
CALL = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s*([a-z_0-9]+)\((.*)$")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
FD_PATH = re.compile(r'<(/[^>]*)>')
KINDS = ("created or written", "read", "metadata", "listed", "renamed", "removed", "made", "synced")
METADATA = {"stat", "lstat", "fstat", "newfstatat", "statx", "access", "faccessat", "faccessat2", "readlink",
            "readlinkat", "statfs", "fstatfs", "chdir", "getcwd", "utimensat", "chmod", "fchmodat", "chown",
            "fchownat", "lchown", "getxattr", "lgetxattr", "listxattr", "llistxattr", "setxattr", "lsetxattr",
            "truncate", "execve", "execveat", "inotify_add_watch", "fanotify_mark", "mknodat", "symlinkat",
            "symlink", "link", "linkat", "chroot", "pivot_root", "mount", "umount2", "name_to_handle_at"}

# The service's process: every SQLAlchemy engine's transactions counted, and the calls of each
# method of the queue, written at exit (not by forked children: they end with os._exit, and the
# pid is checked). The queue's methods are wrapped, not changed: each still runs as it is.
COUNTING = """
import atexit, collections, functools, json, os, sys
import sqlalchemy.event
from sqlalchemy.engine import Engine
from course_tools.service.queue import Queue
count, parent = collections.Counter(), os.getpid()
sqlalchemy.event.listen(Engine, "begin", lambda conn: count.update(["transactions"]))
def _counted(name, method):
    @functools.wraps(method)
    def call(*args, **kwargs):
        count.update([name])
        return method(*args, **kwargs)
    return call
for _name in [n for n, v in vars(Queue).items() if callable(v) and not n.startswith("_")]:
    setattr(Queue, _name, _counted(_name, getattr(Queue, _name)))
def _write():
    if os.getpid() == parent:
        open(os.environ["BENCH_TRANSACTIONS"], "w").write(json.dumps(count))
atexit.register(_write)
from course_tools.cli import main
sys.exit(main(sys.argv[1:]))
"""


def kind_of(call: str, args: str) -> str | None:
    if call in ("open", "openat", "openat2", "creat"):
        return "created or written" if call == "creat" or re.search(r"O_CREAT|O_WRONLY|O_RDWR|O_TRUNC", args) \
            else "read"
    if call.startswith("rename"):
        return "renamed"
    if call in ("unlink", "unlinkat", "rmdir"):
        return "removed"
    if call in ("mkdir", "mkdirat"):
        return "made"
    if call == "getdents64":
        return "listed"
    if call in ("fsync", "fdatasync"):
        return "synced"
    return "metadata" if call in METADATA else None


def path_of(args: str) -> str:
    """The path a call names: its quoted path, joined to the folder of the descriptor before it
    (``openat(5</dir>, "name")``, or AT_FDCWD's working folder) when relative; else the path of
    the descriptor it works on (``getdents64(3</dir>)``)."""
    quoted, fd = QUOTED.search(args), FD_PATH.search(args)
    if quoted:
        name = quoted.group(1)
        if name.startswith("/") or not fd or fd.start() > quoted.start():
            return name
        return f"{fd.group(1)}/{name}"
    return fd.group(1) if fd else ""


def count(log: Path, places: dict[str, Path]) -> dict[tuple[str, str], int]:
    """{(place, kind): calls} of an strace log; ``places``: name -> folder (the first that holds a path)."""
    counts: collections.Counter = collections.Counter()
    prefixes = [(name, str(folder)) for name, folder in places.items()]

    def within(path: str, name: str, prefix: str) -> bool:   # the database: gradebook.db, -journal, -wal
        return path.startswith(prefix) if name == "database" else path == prefix or path.startswith(prefix + "/")

    for line in log.read_text(errors="replace").splitlines():
        match = CALL.match(line)
        if not match or "resumed>" in line:
            continue
        call, args = match.group(2), match.group(3)
        kind = kind_of(call, args)
        if kind is None:
            continue
        path = path_of(args)
        place = next((name for name, prefix in prefixes if within(path, name, prefix)),
                     "relative" if path and not path.startswith("/") else "elsewhere")
        counts[place, kind] += 1
    return counts


def serve_traced(course_dir: Path, scratch: Path, name: str) -> tuple[dict, int, float]:
    """`course serve --once --workers 1` under strace: the counts, the transactions, the seconds."""
    log, transactions = scratch / f"{name}.strace", scratch / f"{name}.transactions"
    env = {**tool_env(), "BENCH_TRANSACTIONS": str(transactions)}
    start = time.monotonic()
    done = subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-y", "-e", f"trace={TRACED}", "-o", str(log),
                           sys.executable, "-c", COUNTING, "serve", "--once", "--workers", "1", "--course",
                           str(course_dir)], env=env, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"course serve --once failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    places = {"database": course_dir / "gradebook.db", "exchange": course_dir.parent / "exchange",
              "course folder": course_dir}
    return count(log, places), collections.Counter(json.loads(transactions.read_text())), seconds


# One queued submission's page, published ``PAGES`` times under distinct names, as serve.py's
# _show_pending does for every queued row whose place changed (each service process, whenever the
# queue moved, at most every 2 s).
PUBLISHING = """
import datetime, sys, time
from pathlib import Path
from course_tools.service import pages
from course_tools.service.publish import feedback_folder, publish
exchange, course_id, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
folder = feedback_folder(exchange, course_id)
when = datetime.datetime(2026, 12, 7, 12, 0)
start = time.perf_counter()
for n in range(count):
    publish(folder, f"pending-{n:05d}.html", pages.pending_page("04_conv_backward", when, n, 4.3 * n, course_id))
print(time.perf_counter() - start)
"""
PAGES = 500

# Two service processes of one course (two hosts) and a backlog of queued rows: how many pages
# each one's refresh (serve.py's _show_pending) publishes, before and after one row is graded
# (claimed and closed: a claim alone moves no place, the claimed row still counts ahead).
# publish is wrapped to count, not changed.
TWO_HOSTS = """
import datetime, sys, time
from course_tools.course_dir import find_course
from course_tools.grading.settings import GradingSettings
from course_tools.service import heartbeat, serve
from course_tools.service.queue import DONE, claimant
course, backlog = find_course(sys.argv[1]), int(sys.argv[2])
count = [0]
real = serve.publish
def counted(*args, **kwargs):
    count[0] += 1
    return real(*args, **kwargs)
serve.publish = counted
settings = GradingSettings.current(course_root=course.root)
a, b = (serve.Service(course, 2, settings) for _ in range(2))
# Registered as `course serve` registers itself (hosts.py), under other machines' names (two
# objects of one process: a pid of this machine would name the other one dead).
for k, host in enumerate((a, b)):
    host.me = f"bench-host-{k}:{101 + k}:5:{k:08x}"
    heartbeat.register(host.queue, host.me, 60, 2)
    time.sleep(0.01)
when = datetime.datetime(2026, 12, 7, 12, 0)
for n in range(backlog):
    a.queue.enqueue("04_conv_backward", f"p{n // 2:04d}", f"pending-{n:05d}", when, f"{n:064x}",
                    {"04_conv_backward": f"pending-{n:05d}.html"})
out = []
for step in ("A", "B", "graded", "A", "B"):
    if step == "graded":
        me = claimant()
        a.queue.finish(a.queue.claim(me, lambda row: 600), me, DONE, "graded")
        continue
    count[0] = 0
    (a if step == "A" else b)._show_pending()
    out.append(count[0])
print(*out)
"""


# One service's scans of a course, as `course serve` makes every 10 s and whenever inbound/
# changed (serve.py's Service.scan: the exchange's checks, the intake, the queue's put-backs and
# the pending pages), ``SCANS`` times, nothing graded (no worker started).
SCANNING = """
import sys
from course_tools.course_dir import find_course
from course_tools.grading.settings import GradingSettings
from course_tools.service.serve import Service
course = find_course(sys.argv[1])
service = Service(course, 1, GradingSettings.current(course_root=course.root))
for _ in range(int(sys.argv[2])):
    service.scan()
service.queue.close()
"""
SCANS = 20


def scan_cost(course_dir: Path, scratch: Path, name: str) -> dict:
    """{(place, kind): calls per scan}: ``SCANS`` + 1 scans less one scan (the set-up's), traced;
    after an untraced run (what a first service makes in a course is not a scan's)."""
    places = {"database": course_dir / "gradebook.db", "exchange": course_dir.parent / "exchange",
              "course folder": course_dir}
    counts = {}
    subprocess.run([sys.executable, "-c", SCANNING, str(course_dir), "1"], env=tool_env(), cwd=ROOT, capture_output=True,
                   text=True, check=True)
    for scans in (1, SCANS + 1):
        log = scratch / f"{name}-scan{scans}.strace"
        subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-y", "-e", f"trace={TRACED}", "-o", str(log),
                        sys.executable, "-c", SCANNING, str(course_dir), str(scans)], env=tool_env(), cwd=ROOT,
                       capture_output=True, text=True, check=True)
        counts[scans] = count(log, places)
    return {key: (counts[SCANS + 1][key] - counts[1][key]) / SCANS for key in set(counts[1]) | set(counts[SCANS + 1])}


def page_cost(exchange: Path, scratch: Path) -> tuple[float, dict]:
    """Seconds per pending page published (untraced), and its file system calls in the exchange
    (traced, a second time)."""
    argv = [sys.executable, "-c", PUBLISHING, str(exchange), "bench", str(PAGES)]
    done = subprocess.run(argv, env=tool_env(), cwd=ROOT, capture_output=True, text=True, check=True)
    seconds = float(done.stdout.split()[-1]) / PAGES
    log = scratch / "pages.strace"
    subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-y", "-e", f"trace={TRACED}", "-o", str(log), *argv],
                   env=tool_env(), cwd=ROOT, capture_output=True, text=True, check=True)
    counts = count(log, {"exchange": exchange})
    return seconds, {kind: counts["exchange", kind] / PAGES for kind in KINDS}


def pending_rewrites(course_dir: Path, backlog: int) -> list[int]:
    """Pages published by host A's refresh, B's, then (after one row graded) A's and B's."""
    done = subprocess.run([sys.executable, "-c", TWO_HOSTS, str(course_dir), str(backlog)], env=tool_env(), cwd=ROOT,
                          capture_output=True, text=True, check=True)
    return [int(n) for n in done.stdout.split()[-4:]]


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="04_conv_backward", choices=list(ASSIGNMENTS))
    parser.add_argument("--submissions", type=int, default=4)
    parser.add_argument("--backlog", type=int, default=200,
                        help="queued rows for the two-hosts pending-page count (default 200)")
    parser.add_argument("--keep", type=Path, help="copy the strace logs into this folder")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.submissions < 1:
        parser().error("--submissions must be at least 1")
    made = {(args.assignment, kind): make(args.assignment) for kind, make in MIX}
    print(f"load average {os.getloadavg()[0]:.1f}; {args.submissions} submission(s) of {args.assignment}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-storage-") as scratch:
        scratch = Path(scratch).resolve()
        setup = argparse.Namespace(assignments=[args.assignment])
        empty_dir, _ = set_up(scratch / "empty", setup)
        empty, empty_tx, empty_s = serve_traced(empty_dir, scratch, "empty")
        course_dir, exchange = set_up(scratch / "full", setup)
        for n in range(args.submissions):
            student = f"s{n * 7:03d}"   # bench_service's mix: student // 7 picks the kind
            drop(exchange, "bench", args.assignment, student, notebook(args.assignment, student, 0, made))
        full, full_tx, full_s = serve_traced(course_dir, scratch, "full")
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for log in scratch.glob("*.strace"):
                shutil.copy(log, args.keep / log.name)
        queue = Queue(f"sqlite:///{course_dir}/gradebook.db", create=False)
        try:   # the served rows' outcomes, before the steps below add rows of their own
            outcomes = collections.Counter(r["outcome"] for r in queue.rows())
        finally:
            queue.close()
        scans_after = scan_cost(course_dir, scratch, "full")
        page_seconds, page_calls = page_cost(exchange, scratch)
        rewrites = pending_rewrites(course_dir, args.backlog)
    n = args.submissions
    scans_empty, scans_full = empty_tx["reclaim"], full_tx["reclaim"]   # one reclaim per scan of the exchange
    print(f"course serve --once: {empty_s:.1f} s and {scans_empty} scan(s) with nothing submitted, {full_s:.1f} s "
          f"and {scans_full} scans with {n} (under strace); outcomes {dict(outcomes)}; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"\ncourse database transactions: {empty_tx['transactions']} with nothing submitted, "
          f"{full_tx['transactions']} with {n}. The queue's methods, calls (nothing submitted / {n} submitted):")
    for name in sorted(set(full_tx) | set(empty_tx)):
        if name != "transactions":
            print(f"  {name:20s} {empty_tx[name]:5d} / {full_tx[name]:5d}")
    places = ["exchange", "course folder", "database", "elsewhere", "relative"]

    def table(title: str, value) -> None:
        print(f"\n{title}\n")
        print("| place | " + " | ".join(KINDS) + " | all |")
        print("| --- |" + " ---: |" * (len(KINDS) + 1))
        for place in places:
            per = [value(place, kind) for kind in KINDS]
            print(f"| {place} | " + " | ".join(f"{v:.1f}" for v in per) + f" | {sum(per):.1f} |")

    table(f"file system calls of one scan of the course after its {n} gradings (Service.scan, {SCANS} traced):",
          lambda place, kind: scans_after.get((place, kind), 0))
    extra = scans_full - scans_empty
    table(f"file system calls per submission: (the run with {n} - the run with none - its {extra} extra scans "
          f"at the cost above) / {n}:",
          lambda place, kind: (full[place, kind] - empty[place, kind] - extra * scans_after.get((place, kind), 0)) / n)
    print(f"\none pending page published (serve.py rewrites every queued row's page whenever its place changed): "
          f"{page_seconds * 1000:.2f} ms on this machine's local disk; its file system calls in the exchange: "
          + ", ".join(f"{kind} {v:.1f}" for kind, v in page_calls.items() if v)
          + f" ({sum(page_calls.values()):.1f} in all)")
    print(f"two service processes (hosts A and B) of one course, {args.backlog} rows queued: pages published by "
          f"A's refresh {rewrites[0]}, then B's {rewrites[1]}; after one row is graded, A's {rewrites[2]}, "
          f"B's {rewrites[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
