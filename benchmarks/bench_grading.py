"""How fast a class is graded: submissions per minute, side by side in one run.

    .venv/bin/python benchmarks/bench_grading.py                 # 50 submissions of 04_conv_backward
    .venv/bin/python benchmarks/bench_grading.py --students 20 --assignment 01_forward_ops

A simulated class (correct, blank, mistaken and hostile notebooks, each made unique by a
comment so no two share a grading) sits in submitted/ of a fresh course folder. Each way of
grading starts from nothing stored and ends with every score in the gradebook:

    nbgrader autograde        plain `nbgrader autograde <id>` with the course's configuration:
                              one notebook at a time, hidden suites outside the kernel
    course grade --workers 1  the course command, one hidden-suite grading at a time
    course grade --workers N  the same, N at a time (N = CPUs by default)

and the scores of every way must be identical (the run fails otherwise).
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
    return label, seconds, scores(course, assignment)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=50)
    parser.add_argument("--assignment", default="04_conv_backward")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)

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
    baseline = runs[0][1]
    print(f"\n{args.students} submissions of {args.assignment} on {os.cpu_count()} CPU(s)")
    print(f"{'grading':28s} {'seconds':>8s} {'subm./min':>10s} {'speed-up':>9s}")
    for label, seconds, _ in runs:
        print(f"{label:28s} {seconds:8.1f} {args.students / seconds * 60:10.1f} {baseline / seconds:8.2f}x")
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
