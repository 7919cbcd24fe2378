"""The grading service under a burst of submissions: throughput and submit-to-feedback time.

    .venv/bin/python benchmarks/bench_service.py                        # 200 submissions, 100 students, 2 min
    .venv/bin/python benchmarks/bench_service.py --submissions 20 --students 10 --window 30
    .venv/bin/python benchmarks/bench_service.py --scheduler            # grading on a local Dask cluster
    .venv/bin/python benchmarks/bench_service.py --compare --workers 2 --dask-workers 2   # both, side by side
    .venv/bin/python benchmarks/bench_service.py --idle 3               # one submission at a time, idle service

A fresh course (`course init`, `course release` of every assignment in ``--assignments``, by
default all seven) gets ``--submissions`` submissions from ``--students`` students, dropped into
the exchange's inbound/ as nbgrader's submit writes them, at random moments within ``--window``
seconds (seeded). Each student works on one assignment (the students are spread over the
assignments in turn); every student submits once; the rest are resubmissions, a fifth of all
submissions unchanged (the same notebook again), the others a new version. The notebooks mix
the filled-in release, a realistic mistake (an unfinished notebook where demo_class.py has no
mistake for that assignment), the blank release and a hostile notebook (bench_grading.py's
KINDS), each version a program of its own. `course serve` runs as its own
process from before the first submission until every one has its feedback; the queue's rows
give each submission's submit-to-feedback time (its recorded submission time to the moment its
page was published) and the throughput.

``--idle N`` measures instead what one student sees from an idle service: once the service
has started (its log says "serving") and had ``--settle`` seconds, N submissions one at a time,
each timed from the moment its folder is complete in inbound/ to the moment its graded page
(not the pending one) can be fetched from the exchange's feedback/ folder.

The anchor is nbgrader's own answer, a cron job that every ``--period`` seconds (default 300)
collects the latest submission of each student and autogrades it: `nbgrader autograde` is timed
here on ``--anchor-sample`` of the same notebooks (one at a time, as it grades), and the cron's
feedback times follow from those seconds per notebook (each batch starts at its tick, or when the
previous batch ends, and grades the latest submission of every student who submitted since the
previous tick; a submission superseded before a tick never gets feedback).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_grading import KINDS  # noqa: E402
from course_lib.tasks import ASSIGNMENTS  # noqa: E402
from course_tools.build import tool_env  # noqa: E402
from course_tools.cli import main as course  # noqa: E402
from course_tools.course_dir import init_course  # noqa: E402
from course_tools.service.publish import feedback_folder, feedback_names  # noqa: E402
from course_tools.service.queue import Queue  # noqa: E402

COURSE_SCRIPT = str(Path(sys.executable).parent / "course")
UNCHANGED_SHARE = 0.2


def plan(submissions: int, students: int, window: float, seed: int) -> list[tuple[float, str, int]]:
    """(seconds after the start, student, version) per submission, in time order: every student's
    first submission is version 0; an unchanged resubmission repeats the student's last version."""
    rng = random.Random(seed)
    moments = sorted(rng.uniform(0, window) for _ in range(submissions))
    order = [f"s{i:03d}" for i in range(students)]
    rng.shuffle(order)
    extra = [rng.choice(order) for _ in range(submissions - students)]
    unchanged = set(rng.sample(range(len(extra)), min(len(extra), round(UNCHANGED_SHARE * submissions))))
    latest: dict[str, int] = {}
    out = []
    for when, (n, student) in zip(moments, enumerate(order + extra)):
        if student not in latest:
            latest[student] = 0
        elif (n - students) not in unchanged:
            latest[student] += 1
        out.append((when, student, latest[student]))
    return out


def with_mistake_or_unfinished(assignment: str) -> nbformat.NotebookNode:
    """The realistic mistake demo_class.py has for 01 and 04; for the others, the filled-in release
    with its last answer left as released (a student not done yet)."""
    from course_tools.demo_class import MISTAKES, blank, filled_release, with_mistake

    if assignment in MISTAKES:
        return with_mistake(assignment)
    nb, released = filled_release(assignment), blank(assignment)
    answers = [i for i, cell in enumerate(released.cells)
               if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")]
    nb.cells[answers[-1]] = released.cells[answers[-1]]
    return nb


# bench_grading.py's mix, with a mistake (or an unfinished notebook) for every assignment.
MIX = [(kind, with_mistake_or_unfinished if kind == "mistake" else make) for kind, make in KINDS]


def assignment_of(student: str, assignments: list[str]) -> str:
    """The assignment ``student`` works on (students spread over the assignments in turn)."""
    return assignments[int(student[1:]) % len(assignments)]


def notebook(assignment: str, student: str, version: int, made: dict) -> nbformat.NotebookNode:
    """``made``: {(assignment, kind): notebook}."""
    kind, _ = MIX[(int(student[1:]) // 7 + version) % len(MIX)]
    nb = nbformat.from_dict(json.loads(json.dumps(made[assignment, kind])))
    nb.cells.insert(0, nbformat.v4.new_code_cell(f"# {student}, version {version} ({kind})"))
    return nb


def drop(exchange: Path, course_id: str, assignment: str, student: str, nb) -> str:
    """One submission in inbound/ as nbgrader's submit writes it (the secret last)."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    name = f"{student}+{assignment}+{stamp}+{secrets.token_hex(4)}"
    folder = exchange / course_id / "inbound" / name
    folder.mkdir()
    nbformat.write(nb, str(folder / f"{assignment}.ipynb"))
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    return name


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


def start_service(course_dir: Path, args, scheduler: str | None):
    """`course serve` as its own process, once its log says it is serving, and ``--settle`` s more."""
    command = [COURSE_SCRIPT, "serve", "--course", str(course_dir), "--workers", str(args.workers), "--rescan", "5"]
    if scheduler:
        command += ["--scheduler", scheduler]
    log = open(course_dir / "serve.log", "w")
    service = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=tool_env(), start_new_session=True)
    deadline = time.monotonic() + 300
    while "INFO serving" not in (course_dir / "serve.log").read_text():
        if service.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"course serve did not start; see {course_dir}/serve.log")
        time.sleep(0.2)
    time.sleep(args.settle)
    return service, log


def stop_service(service, log) -> None:
    os.killpg(service.pid, signal.SIGTERM)
    service.wait(timeout=60)
    log.close()


def idle(course_dir: Path, exchange: Path, args, made) -> list[tuple[str, float]]:
    """(assignment, seconds from a complete submission to its fetchable graded page), one at a time."""
    service, log = start_service(course_dir, args, None)
    out = []
    try:
        for n in range(args.idle):
            assignment = args.assignments[n % len(args.assignments)]
            nb = notebook(assignment, f"i{n:03d}", 1, made)   # the realistic mistake: feedback with a diagnosis
            start = time.monotonic()
            name = drop(exchange, "bench", assignment, f"i{n:03d}", nb)
            names = feedback_names(exchange / "bench" / "inbound" / name, [assignment])
            page = feedback_folder(exchange, "bench") / names[assignment]
            while not (page.is_file() and "in the grading queue" not in page.read_text()):
                if time.monotonic() - start > 600 or service.poll() is not None:
                    raise SystemExit(f"no feedback for {name}; see {course_dir}/serve.log")
                time.sleep(0.02)
            out.append((assignment, time.monotonic() - start))
            print(f"  {assignment}: {out[-1][1]:.2f} s", flush=True)
            time.sleep(2)
    finally:
        stop_service(service, log)
    return out


def set_up(folder: Path, args) -> tuple[Path, Path]:
    """A fresh course under ``folder`` with every assignment of ``--assignments`` released:
    (course folder, exchange)."""
    course_dir, exchange = folder / "course", folder / "exchange"
    # course_dir.init_course is `course init` without building the student install (20-30 s);
    # --force: every assignment open at once (a real course releases one after another's late window).
    init_course(course_dir, "bench", exchange)
    if any(course(["release", a, "--course", str(course_dir), "--force"]) != 0 for a in args.assignments):
        raise SystemExit("could not set up the course")
    return course_dir, exchange


def burst(course_dir: Path, exchange: Path, args, schedule, made, dask: bool) -> dict:
    """run_service through the local pool, or on a local Dask cluster of ``--dask-workers``
    single-threaded worker processes (each keeps its warm fork server: on_dask.py)."""
    if not dask:
        return run_service(course_dir, exchange, args, schedule, made, None)
    from distributed import LocalCluster

    with LocalCluster(n_workers=args.dask_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster:
        return run_service(course_dir, exchange, args, schedule, made, cluster.scheduler_address)


WHERE = {"local": lambda args: f"course serve --workers {args.workers}",
         "dask": lambda args: f"course serve --scheduler (Dask, {args.dask_workers} workers)"}
DASK_TARGET = 1.15   # issue 43: Dask's drain time and p50 within this factor of the local pool's


def run_service(course_dir: Path, exchange: Path, args, schedule, made, scheduler: str | None) -> dict:
    service, log = start_service(course_dir, args, scheduler)
    start = time.monotonic()
    for when, student, version in schedule:
        time.sleep(max(0.0, when - (time.monotonic() - start)))
        assignment = assignment_of(student, args.assignments)
        drop(exchange, "bench", assignment, student, notebook(assignment, student, version, made))
    queue = Queue(f"sqlite:///{course_dir}/gradebook.db")
    deadline = time.monotonic() + args.limit
    try:
        while time.monotonic() < deadline:
            rows = queue.rows()
            if len(rows) == len(schedule) and all(r["state"] in ("done", "grading_error") for r in rows):
                break
            if service.poll() is not None:
                raise SystemExit(f"course serve stopped (exit {service.returncode}); see {course_dir}/serve.log")
            time.sleep(1)
        else:
            raise SystemExit(f"not every submission had feedback within {args.limit} s")
        rows = queue.rows()
    finally:
        queue.close()
        stop_service(service, log)
    waits = [(r["finished_at"] - r["submitted_at"]).total_seconds() for r in rows]
    first = min(r["submitted_at"] for r in rows)
    last = max(r["finished_at"] for r in rows)
    # Claim to closed row, for the rows graded now (not reused, not a receipt): one grading's cost to the service.
    claimed = [(r["finished_at"] - r["started_at"]).total_seconds() for r in rows if r["outcome"] == "graded"]
    return {"waits": waits, "span": (last - first).total_seconds(), "gradings": sum(r["gradings"] for r in rows),
            "claim_to_result": statistics.median(claimed) if claimed else float("nan"),
            "errors": sum(r["state"] == "grading_error" for r in rows),
            "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in {r["outcome"] for r in rows}}}


def nbgrader_seconds_per_notebook(course_dir: Path, assignments: list[str], schedule, made, sample: int) -> float:
    """`nbgrader autograde` of ``sample`` distinct notebooks (placed in submitted/; the first
    students of the schedule, so the sample spreads over the assignments), per notebook."""
    picked = sorted({(s, v) for _, s, v in schedule})[:sample]
    for student, version in picked:
        assignment = assignment_of(student, assignments)
        folder = course_dir / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook(assignment, student, version, made), str(folder / f"{assignment}.ipynb"))
        (folder / "timestamp.txt").write_text(
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    start = time.perf_counter()
    for assignment in sorted({assignment_of(s, assignments) for s, _ in picked}):
        done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", assignment, "--force"], cwd=course_dir,
                              env=tool_env(), capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit("nbgrader autograde failed:\n" + (done.stdout + done.stderr)[-3000:])
    return (time.perf_counter() - start) / len(picked)


def cron_waits(schedule, period: float, per_notebook: float) -> tuple[list[float], int, float]:
    """Submit-to-feedback of each submission under a cron of collect + autograde every ``period``
    seconds (the first tick ``period`` after the start), how many never get feedback, and when
    the last batch ends (seconds after the start)."""
    waits, never, free_at, tick, i = [], 0, 0.0, period, 0
    while i < len(schedule):
        batch = [entry for entry in schedule[i:] if entry[0] <= tick]
        i += len(batch)
        latest = {student: when for when, student, _ in batch}
        never += len(batch) - len(latest)
        end = max(tick, free_at) + per_notebook * len(latest)
        free_at = end
        waits += [end - when for when in latest.values()]
        tick += period
    return waits, never, free_at


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--window", type=float, default=120, help="seconds over which they arrive (default 120)")
    parser.add_argument("--assignments", nargs="+", default=list(ASSIGNMENTS), choices=list(ASSIGNMENTS),
                        help="the assignments submitted (default: all seven)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="the service's workers")
    parser.add_argument("--scheduler", action="store_true",
                        help="grade on a local Dask cluster of --dask-workers processes (course serve --scheduler)")
    parser.add_argument("--dask-workers", type=int, default=2)
    parser.add_argument("--compare", action="store_true",
                        help="both in one run, each on a fresh course: the local pool (--workers), then Dask "
                             "(--dask-workers), with the ratios of drain time and p50")
    parser.add_argument("--period", type=float, default=300, help="the anchor's cron period in seconds (default 300)")
    parser.add_argument("--anchor-sample", type=int, default=7, help="notebooks nbgrader autograde is timed on")
    parser.add_argument("--limit", type=float, default=7200, help="give up after this many seconds")
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--idle", type=int, default=0, metavar="N",
                        help="instead: N submissions one at a time to an idle service, each timed to its feedback")
    parser.add_argument("--settle", type=float, default=10,
                        help="seconds the service runs before the first submission (default 10)")
    args = parser.parse_args(argv)
    if not 0 < args.students <= args.submissions:
        parser.error("--students must be between 1 and --submissions")
    schedule = plan(args.submissions, args.students, args.window, args.seed)
    made = {(assignment, kind): make(assignment) for assignment in args.assignments for kind, make in MIX}

    with tempfile.TemporaryDirectory(prefix="bench-service-") as scratch:
        if args.idle:
            course_dir, exchange = set_up(Path(scratch) / "course", args)
            print(f"one submission at a time to an idle `course serve --workers {args.workers}`, "
                  f"load average {os.getloadavg()[0]:.1f}:")
            seconds = [t for _, t in idle(course_dir, exchange, args, made)]
            print(f"submit to fetchable feedback: median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s "
                  f"of {len(seconds)}; load average {os.getloadavg()[0]:.1f} at the end")
            return 0
        ways = ["local", "dask"] if args.compare else ["dask" if args.scheduler else "local"]
        served = {}
        for way in ways:
            # A course of its own for each way: the second must not find the first's stored results.
            course_dir, exchange = set_up(Path(scratch) / way, args)
            print(f"load average {os.getloadavg()[0]:.1f} before {WHERE[way](args)}", flush=True)
            served[way] = burst(course_dir, exchange, args, schedule, made, dask=way == "dask")
        per_notebook = nbgrader_seconds_per_notebook(course_dir, args.assignments, schedule, made, args.anchor_sample)
    cron, never, cron_end = cron_waits(schedule, args.period, per_notebook)

    print(f"\n{args.submissions} submissions of {', '.join(args.assignments)} from {args.students} students within "
          f"{args.window:g} s; {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f} at the end")
    for way, run in served.items():
        print(f"course serve on {WHERE[way](args)}: {run['gradings']} hidden-suite gradings, outcomes "
              f"{run['outcomes']}, {run['errors']} grading error(s); claim to result of a graded row: median "
              f"{run['claim_to_result']:.2f} s")
    print(f"{'':44s} {'p50 s':>7s} {'p95 s':>7s} {'max s':>7s} {'drain s':>8s} {'subm./min':>10s}  no feedback")
    for way, run in served.items():
        waits = run["waits"]
        print(f"{WHERE[way](args):44s} {percentile(waits, .5):7.1f} {percentile(waits, .95):7.1f} {max(waits):7.1f} "
              f"{run['span']:8.1f} {len(waits) / run['span'] * 60:10.1f}  0")
    print(f"{f'nbgrader, collect+autograde every {args.period:g} s':44s} {percentile(cron, .5):7.1f} "
          f"{percentile(cron, .95):7.1f} {max(cron):7.1f} {cron_end - schedule[0][0]:8.1f} "
          f"{len(cron) / (cron_end - schedule[0][0]) * 60:10.1f}  {never}")
    first = served[ways[0]]["waits"]
    print(f"ratio p50 (nbgrader cron / {WHERE[ways[0]](args)}): {percentile(cron, .5) / percentile(first, .5):.2f}x; "
          f"nbgrader autograde took {per_notebook:.1f} s per notebook (mean of {args.anchor_sample}, timed here)")
    if args.compare:
        local, dask = served["local"], served["dask"]
        drain = dask["span"] / local["span"]
        p50 = percentile(dask["waits"], .5) / percentile(local["waits"], .5)
        verdict = "PASS" if max(drain, p50) <= DASK_TARGET else "MISS"
        print(f"Dask / local pool: drain {drain:.2f}x, p50 {p50:.2f}x, p95 "
              f"{percentile(dask['waits'], .95) / percentile(local['waits'], .95):.2f}x "
              f"({verdict}: target both within {DASK_TARGET}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
