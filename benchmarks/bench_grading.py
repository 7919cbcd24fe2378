"""How fast a class is graded: submissions per minute, side by side in one run.

    .venv/bin/python benchmarks/bench_grading.py                 # 50 submissions of 04_conv_backward
    .venv/bin/python benchmarks/bench_grading.py --students 20 --assignment 01_forward_ops
    .venv/bin/python benchmarks/bench_grading.py --one-each      # one complete submission per assignment

A simulated class (correct, blank, mistaken and hostile notebooks, each made unique by a
comment so no two share a grading) sits in submitted/ of a fresh course folder. Each way of
grading starts from nothing stored and ends with every score in the gradebook:

    nbgrader autograde        plain `nbgrader autograde <id>` with the course's configuration:
                              one notebook at a time, hidden suites outside the kernel
    course grade --workers 1  the course command, one hidden-suite grading at a time
    course grade --workers 2  the same, 2 at a time (processes forked from a warm fork server)
    course grade on Dask      a local Dask cluster of --dask-workers processes (default 4)

and the scores of every way must be identical (the run fails otherwise). Where one
submission's time goes (sandbox start and imports, the notebook's cells, the hidden checks)
is read from the stored results and printed too.

--one-each grades the executed solution of every assignment once as `course grade` does (a
process forked from a warm fork server) and once in a fresh process (as nbgrader's autograde
does), and prints both times and the breakdown (the target: at most 6 s each).
"""
from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course_tools.build import tool_env  # noqa: E402
from course_tools.course_dir import Course, init_course  # noqa: E402
from course_tools.demo_class import blank, filled_release, hostile, with_mistake  # noqa: E402
from course_tools.grading.results import ResultStore  # noqa: E402

KINDS = [("correct", filled_release), ("mistake", with_mistake), ("blank", blank), ("hostile", hostile)]


def make_class(course: Course, assignment: str, students: int) -> list[str]:
    """Write ``students`` submissions straight into submitted/ (the exchange is not what is timed)."""
    made = {kind: make(assignment) for kind, make in KINDS}
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    names = []
    for i in range(students):
        kind, _ = KINDS[i % len(KINDS)]
        nb = nbformat.from_dict(made[kind])
        nb.cells.insert(0, nbformat.v4.new_code_cell(f"# student {i:03d} ({kind})"))  # unique program per student
        name = f"s{i:03d}_{kind}"
        folder = course.folder("submitted") / name / assignment
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / f"{assignment}.ipynb"))
        (folder / "timestamp.txt").write_text(stamp)
        names.append(name)
    return names


def scores(course: Course, assignment: str) -> dict:
    with course.gradebook() as gradebook:
        return {s.student_id: round(s.score, 4) for s in gradebook.assignment_submissions(assignment)}


def timed(label: str, command: list[str], course: Course, assignment: str) -> tuple[str, float, dict]:
    ResultStore(course.root).clear(assignment)
    start = time.perf_counter()
    result = subprocess.run(command, cwd=course.root, env=tool_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{label} failed:\n{(result.stdout + result.stderr)[-3000:]}")
    phases = [line.strip() for line in result.stdout.splitlines() if "hidden suites " in line and "gradebook" in line]
    return label + (f"  ({phases[-1].split(': ', 1)[-1].split('. Next')[0]})" if phases else ""), seconds, \
        scores(course, assignment)


def breakdown(course: Course, assignment: str) -> str:
    """Mean seconds per graded notebook, by phase, from the stored results."""
    import json

    folder = ResultStore(course.root).folder / assignment
    timings = [json.loads(p.read_text()).get("timing") for p in folder.glob("*.json") if p.name != "grading-errors.json"]
    timings = [t for t in timings if t]
    if not timings:
        return "no stored timings"
    mean = {k: sum(t[k] for t in timings) / len(timings) for k in ("sandbox_and_imports", "notebook_cells", "checks")}
    return (f"per notebook, in its grading process: sandbox start and imports {mean['sandbox_and_imports']:.2f} s, "
            f"the notebook's cells {mean['notebook_cells']:.2f} s, the hidden checks {mean['checks']:.2f} s "
            f"(mean of {len(timings)})")


def one_each() -> int:
    """One complete submission (the executed solution) of every assignment, graded the way
    `course grade` does (a process forked from the warm fork server) and the way nbgrader's
    autograde does (a fresh grading process: Python and the grader's imports started anew)."""
    from course_lib import tasks
    from course_tools.grading.launch.pool import grade_many
    from course_tools.grading.launch.runner import grade_in_process
    from course_tools.grading.settings import GradingSettings

    settings = GradingSettings.current()

    def notebook(assignment):
        return ROOT / "source" / assignment / f"{assignment}.ipynb"

    # The fork server starts (and imports everything) on the first job: not what is measured.
    first = next(iter(tasks.ASSIGNMENTS))
    for _ in grade_many([("warm-up", first, notebook(first))], workers=1, settings=settings):
        pass
    print(f"{'assignment':22s} {'course grade s':>14s} {'fresh process s':>15s} {'sandbox':>8s} {'cells':>7s} "
          f"{'checks':>7s}  slowest cells")
    worst = 0.0
    for assignment in tasks.ASSIGNMENTS:
        start = time.perf_counter()
        [(_, result)] = list(grade_many([(assignment, assignment, notebook(assignment))], workers=1, settings=settings))
        forked = time.perf_counter() - start
        start = time.perf_counter()
        fresh = grade_in_process(assignment, notebook(assignment), settings)
        fresh_seconds = time.perf_counter() - start
        for r in (result, fresh):
            if r.get("grading_error"):
                raise SystemExit(f"{assignment}: {r['grading_error']}")
        t = result["timing"]
        worst = max(worst, forked)
        slow = ", ".join(f"{c} {s:.1f}" for c, s in t["slowest_cells"][:3])
        print(f"{assignment:22s} {forked:14.2f} {fresh_seconds:15.2f} {t['sandbox_and_imports']:8.2f} "
              f"{t['notebook_cells']:7.2f} {t['checks']:7.2f}  {slow}")
    print(f"slowest in course grade: {worst:.1f} s (target: at most 6 s). sandbox, cells, checks: the parts of the "
          f"course grade run; a fresh process adds starting Python and importing the grader, which the fork "
          f"server does once")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--assignment", default="04_conv_backward")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--dask-workers", type=int, default=4, help="processes of the local Dask cluster (0: skip)")
    parser.add_argument("--one-each", action="store_true", help="grade one solution of every assignment instead")
    args = parser.parse_args(argv)
    if args.one_each:
        return one_each()

    with tempfile.TemporaryDirectory(prefix="bench-grading-") as scratch:
        course = init_course(Path(scratch) / "course", "bench", Path(scratch) / "exchange")
        release = subprocess.run([str(Path(sys.executable).parent / "course"), "release", args.assignment,
                                  "--course", str(course.root)], capture_output=True, text=True, env=tool_env())
        if release.returncode != 0:
            raise SystemExit(release.stdout + release.stderr)
        make_class(course, args.assignment, args.students)
        course_cmd = [str(Path(sys.executable).parent / "course"), "grade", args.assignment, "--course", str(course.root)]
        runs = [
            timed("nbgrader autograde", [sys.executable, "-m", "nbgrader", "autograde", args.assignment, "--force"],
                  course, args.assignment),
            timed("course grade --workers 1", course_cmd + ["--workers", "1"], course, args.assignment),
            timed(f"course grade --workers {args.workers}", course_cmd + ["--workers", str(args.workers)],
                  course, args.assignment),
        ]
        split = breakdown(course, args.assignment)
        if args.dask_workers:
            from distributed import LocalCluster

            with LocalCluster(n_workers=args.dask_workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster:
                runs.append(timed(f"course grade, Dask x{args.dask_workers}",
                                  course_cmd + ["--scheduler", cluster.scheduler_address], course, args.assignment))
    baseline = runs[0][1]
    print(f"\n{args.students} submissions of {args.assignment} on {os.cpu_count()} CPU(s)")
    print(f"{'grading':28s} {'seconds':>8s} {'subm./min':>10s} {'speed-up':>9s}")
    for label, seconds, _ in runs:
        name, _, phases = label.partition("  (")
        print(f"{name:28s} {seconds:8.1f} {args.students / seconds * 60:10.1f} {baseline / seconds:8.2f}x"
              + (f"   {phases.rstrip(')')}" if phases else ""))
    print(split)
    reference = runs[0][2]
    differ = [label for label, _, got in runs[1:] if got != reference]
    if differ or len(reference) != args.students:
        print(f"SCORES DIFFER from nbgrader autograde's: {differ}")
        return 1
    print(f"scores identical in every run ({len(reference)} students; "
          f"mean {sum(reference.values()) / len(reference):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
