"""`course demo`: a whole term in a few minutes, run through the instructor's own commands
(release, collect, grade, feedback, export, status, report) on the personas of demo_class.py.
It drives the CLI, so it lives here; demo_class.py (the class and its notebooks) imports nothing
of the CLI.
"""
from __future__ import annotations

import datetime
import shutil
import time
from pathlib import Path

from .. import build as builder
from ..course_dir import ROOT, check_assignment, init_course
from ..demo_class import DemoClass
from . import instructor, status
from . import report as course_report


def _step(text: str) -> None:
    print(f"\n== {text}", flush=True)


def run_demo(base: Path | None = None, assignment: str = "04_conv_backward", workers: int = 2) -> int:
    check_assignment(assignment)
    instructor.require_sandbox()  # before the minutes of building: the demo grades in the sandbox
    start = time.perf_counter()
    base = Path(base or Path.cwd() / "demo-course").resolve()
    if base.exists():
        if not (base / ".course-demo").exists():
            raise SystemExit(f"{base} exists and is not a demo folder; choose another with --dir")
        shutil.rmtree(base)
    base.mkdir(parents=True)
    (base / ".course-demo").write_text("made by `course demo`; safe to delete\n")
    demo = DemoClass(base, assignment)

    every = builder.available_assignments()
    _step(f"instructor: build the course ({len(every)} assignments) from source/ and compare with the committed one")
    stale = builder.compare_builds(every, *_build_into(builder, every, base / "build"))
    if stale:
        print("  the committed build is out of date: " + ", ".join(stale) + " (run `course build`)")
    else:
        print("  assignments/ and solutions/ are up to date")

    _step("instructor: make a course folder and release the assignment (due in a week)")
    course = init_course(demo.course_dir, "demo", demo.exchange)
    week = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=7)
    instructor.release(course, assignment, week.strftime("%Y-%m-%d %H:%M:%S UTC"))

    _step("students: fetch, work, submit")
    on_time = [p for p in demo.personas if not p.late]
    for persona in demo.personas:
        demo.fetch(persona.student)
    for persona in on_time:
        print(f"  {persona.student} {persona.does}")
        demo.submit(persona)

    _step("the deadline passes (simulated: the instructor sets the due date to now); eve submits after it")
    time.sleep(1.5)  # due dates have whole seconds: the last on-time submission must stay before it
    instructor.release(course, assignment, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
    for persona in demo.personas:
        if persona.late:
            print(f"  {persona.student} {persona.does}")
            demo.submit(persona)

    _step("instructor: collect and grade")
    instructor.collect(course, assignment)
    instructor.grade(course, assignment, None, workers, None, fresh=False, timeout=None)

    _step("instructor: feedback and export; students fetch their feedback")
    instructor.feedback(course, assignment, None)
    for persona in demo.personas:
        demo.fetch(persona.student, feedback=True)
    instructor.export(course, demo.course_dir / "grades.csv")
    status.status(course, assignment)

    _step("instructor: what the grading says (course report)")
    page = course_report.report(course, assignment)

    _step(f"done in {time.perf_counter() - start:.0f} s. Look around:")
    print(f"  feedback pages      {course.folder('feedback')}/<student>/{assignment}/{assignment}.html")
    print(f"  as students got it  {base}/students/<student>/{assignment}/feedback/")
    print(f"  grades              {demo.course_dir / 'grades.csv'}")
    print(f"  the class report    {page}")
    print(f"  solutions           {ROOT / 'solutions' / assignment / (assignment + '.ipynb')} "
          f"(executed; this run's build: {base / 'build' / 'solutions'})")
    print(f"  the course folder   {demo.course_dir} (cd there and try `course status`)")
    return 0


def _build_into(builder, assignments: list[str], folder: Path) -> tuple[Path, Path]:
    release, solutions = folder / "assignments", folder / "solutions"
    builder.build(assignments, release, solutions)
    return release, solutions
