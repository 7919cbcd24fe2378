"""`course`: the course's one command-line tool (installed with the package).

    instructor   course init | build | student-package | release | extend | extensions | collect | grade | serve | feedback | export | status
    LMS          course lms push | roster | keys | config   (cli/lms.py; course_tools/lms)
    student      course fetch | submit | check   (course_student/cli.py; the student install has only these)
    everyone     course demo
    developers   course mutants   (course_tools/mutation: mutation testing of the hidden suites)

`course <command> --help` explains each. Instructor commands act on a course folder (see
course_tools/course_dir.py): --course DIR, $COURSE_DIR, the nearest folder upwards with an
nbgrader_config.py, or this repository.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from course_student import cli as student_cli  # first: course_student keeps `course` quick to start
from course_student.cli import EPILOG, fail

from ..course_dir import CourseError, find_course
from ..terminal import printable
from . import extend, instructor, lms, status


def _adapt(text: str):
    """--adapt MIN:MAX, or argparse's error saying what is wrong with it."""
    from ..grading.launch.clusters import parse_adapt

    try:
        return parse_adapt(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course", description="Build, release, grade and check the deep-learning systems course.",
        epilog="Run `course <command> --help` for each command. " + EPILOG)
    commands = parser.add_subparsers(dest="command", metavar="<command>")

    def command(name: str, help_text: str, description: str | None = None, course_folder: bool = True,
                add_help: bool = True):
        sub = commands.add_parser(name, help=help_text, description=description or help_text, epilog=EPILOG,
                                  add_help=add_help)
        if course_folder:
            sub.add_argument("--course", metavar="DIR", default=None,
                             help="the course folder (default: $COURSE_DIR, the nearest folder upwards with an "
                                  "nbgrader_config.py, or this repository)")
        return sub

    sub = command("init", "make a course folder for a semester (nbgrader_config.py, gradebook, exchange)",
                  course_folder=False)
    sub.add_argument("directory", type=Path)
    sub.add_argument("--course-id", required=True, help="nbgrader's course id, e.g. dlsys-2027")
    sub.add_argument("--exchange", type=Path, default=None, help="nbgrader's exchange root (default /srv/nbgrader/exchange)")
    sub.add_argument("--db-url", default=None, help="gradebook URL (default: SQLite in the folder); "
                                                     "postgresql+psycopg2://user@host/db for several graders")
    sub.add_argument("--roster", type=Path, default=None,
                     help="a CSV username,role,first_name,last_name (as hub/roster.csv): its students go into the "
                          "gradebook with their names, which formgrader shows the graders")

    sub = command("build", "regenerate releases (assignments/), executed solutions (solutions/) and the "
                           "student-facing course_lib from source/", course_folder=False)
    sub.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    sub.add_argument("--check", action="store_true", help="only report what is out of date (exit 1 if anything is)")
    sub.add_argument("--no-solutions", action="store_true", help="build the releases only")

    sub = command("student-package", "build the student install: a wheel with the student commands and a "
                                      "course_lib whose solution regions are all stubbed", course_folder=False)
    sub.add_argument("--out", type=Path, default=Path("dist") / "student",
                     help="where the wheel (and the folder it was built from) go (default dist/student)")

    sub = command("release", "register an assignment in the gradebook and release it to the exchange")
    sub.add_argument("assignment")
    sub.add_argument("--due", default=None, help="due date, e.g. '2026-12-01 23:59 UTC' (late work loses 10%% "
                                                 "per started day; see nbgrader_config.py)")
    sub.add_argument("--force", "--yes", action="store_true", dest="force",
                     help="release even though an earlier assignment still accepts late work that earns points "
                          "(this release contains that assignment's reference solution), or though it makes a new "
                          "version of a release students may hold (it says first what changes for them)")

    extend.add_commands(command)

    sub = command("collect", "collect submissions from the exchange into submitted/")
    sub.add_argument("assignment")

    sub = command("grade", "grade collected submissions with the hidden suites and record the scores in the "
                           "gradebook (nbgrader autograde)")
    sub.add_argument("assignment")
    sub.add_argument("--student", action="append", default=None, help="only this student (repeatable)")
    sub.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                     help="notebooks graded at once on this machine (default: the number of CPUs)")
    sub.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="grade on a Dask cluster instead, e.g. tcp://10.0.0.5:8786 (workers need this "
                          "course's same commit installed, not the course folder), or on one started here: 'local' "
                          "(--workers processes) or 'slurm' (--workers Slurm jobs)")
    sub.add_argument("--fresh", action="store_true", help="forget stored hidden-suite results and grade everything again")
    sub.add_argument("--timeout", type=int, default=None,
                     help="seconds one notebook's grading may take in all (default: what the assignment's time "
                          "budgets allow: loading plus COURSE_GRADER_TASK_SECONDS per task)")
    sub.add_argument("--unsandboxed", action="store_true",
                     help="grade without bubblewrap (not recommended: the submissions' code can then read every "
                          "world-readable file; it is still limited and killed through a cgroup, which needs root)")
    sub.add_argument("--version", choices=["own", "latest"], default="own",
                     help="which release version each submission is graded against: 'own' (default: the one its "
                          "locked cells match, with that version's tasks and points) or 'latest' (shows the "
                          "consequences first and stores nothing without --yes)")
    sub.add_argument("--yes", action="store_true", help="with --version latest: store the scores")

    sub = command("serve", "the grading service: grade each submission as it reaches the exchange and publish its "
                           "feedback (the students' Fetch Feedback), under the policy in nbgrader_config.py "
                           "(c.GradingService); runs until stopped")
    sub.add_argument("--workers", type=int, default=1, help="submissions graded at once (default 1)")
    sub.add_argument("--rescan", type=float, default=10, metavar="SECONDS",
                     help="look through the whole exchange this often, besides its filesystem events (default 10)")
    sub.add_argument("--once", action="store_true", help="stop once every submission found is graded")
    sub.add_argument("--timeout", type=int, default=None,
                     help="seconds one notebook's grading may take in all (default: its time budgets, at most "
                          "COURSE_GRADER_MAX_NOTEBOOK_SECONDS)")
    sub.add_argument("--unsandboxed", action="store_true", help="grade without bubblewrap (see course grade)")
    sub.add_argument("--scheduler", default=None, metavar="ADDRESS",
                     help="grade on the Dask cluster at ADDRESS (tcp://host:8786) instead of this machine, or on "
                          "one the service starts: 'local' (worker processes on this machine) or 'slurm' (workers "
                          "as Slurm jobs, dask-jobqueue); --workers is then how many submissions are sent to it at "
                          "once, and the started cluster's size")
    sub.add_argument("--adapt", default=None, metavar="MIN:MAX", type=_adapt,
                     help="with --scheduler local or slurm: Dask's adaptive deployment sizes the cluster by the "
                          "queue, MIN workers when idle (0: none), up to MAX in a burst")

    sub = command("feedback", "generate feedback pages (HTML) and release them to the students")
    sub.add_argument("assignment")
    sub.add_argument("--student", action="append", default=None, help="only this student")
    sub.add_argument("--force", action="store_true",
                     help="release even though a student with an extension can still earn points on the "
                          "assignment (a classmate's feedback could reach them before their deadline)")

    sub = command("export", "export every grade to a CSV file (nbgrader export), or as Canvas's or Moodle's grade "
                            "import file")
    sub.add_argument("--to", type=Path, default=None,
                     help="the CSV file (default grades.csv; grades-canvas.csv, grades-moodle.csv with --format)")
    sub.add_argument("--format", choices=["nbgrader", "canvas", "moodle"], default="nbgrader",
                     help="nbgrader: grades.csv as nbgrader writes it (default); canvas: Canvas's gradebook import "
                          "CSV; moodle: Moodle's grade import CSV (the same scores; docs/lms.md)")
    sub.add_argument("--exporter", default=None, metavar="MODULE.CLASS",
                     help="an nbgrader export plugin instead of the CSV one (nbgrader export --exporter)")

    status.add_commands(command)
    lms.add_commands(command)

    sub = command("report", "what a graded assignment says: per task and hidden check, the class's common "
                            "mistakes, miscalibrated checks, manual grading left, late work, grading errors "
                            "(terminal summary and an HTML page next to the gradebook)")
    sub.add_argument("assignment")
    sub.add_argument("--csv", type=Path, default=None, metavar="FILE", help="also write the raw per-check table")

    sub = command("similarity", "rank pairs of submissions by how alike their solution code is (names, "
                                "comments and order of helpers normalised; given code ignored)")
    sub.add_argument("assignment")
    sub.add_argument("--top", type=int, default=10, help="pairs to list (default 10)")

    # The student commands, as the student install's `course` has them (course_student/cli.py).
    student_cli.add_commands(commands, EPILOG)

    sub = command("mutants", "mutation testing of the hidden suites: grade small changes of the reference "
                             "solution and list the ones no check notices (`course mutants --help`)",
                  course_folder=False, add_help=False)
    sub.add_argument("options", nargs=argparse.REMAINDER, help="course_tools/mutation/__main__.py's options")

    sub = command("demo", "run a simulated class end to end: release, submissions (correct, wrong, hostile, "
                          "late), grading, feedback, grade table", course_folder=False)
    sub.add_argument("--dir", type=Path, default=None, help="where to put the demo course (default demo-course/)")
    sub.add_argument("--assignment", default="04_conv_backward")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["mutants"]:  # its own parser (and --help): course_tools/mutation/__main__.py
        from ..mutation.__main__ import main as mutants

        return mutants(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return _run(args)
    except CourseError as err:  # may quote nbgrader's log, with the exchange's folder names in it
        return fail(printable(str(err)))
    except KeyboardInterrupt:
        return fail("interrupted")


def _run(args) -> int:
    name = args.command
    if name == "init":
        return instructor.init(args.directory, args.course_id, args.exchange, args.db_url, args.roster)
    if name == "build":
        return instructor.build(args.assignments, args.check, not args.no_solutions)
    if name in student_cli.NAMES:
        return student_cli.run(args)
    if name == "student-package":
        from ..student_package import main as student_package

        return student_package(["--out", str(args.out)])
    if name == "demo":
        from .demo import run_demo

        return run_demo(args.dir, args.assignment)
    course = find_course(args.course)
    if name == "release":
        return instructor.release(course, args.assignment, args.due, args.force)
    if name == "extend":
        return extend.extend(course, args)
    if name == "extensions":
        return extend.extensions(course, args.assignment, args.history)
    if name == "collect":
        return instructor.collect(course, args.assignment)
    if name == "grade":
        if args.workers < 1:
            raise CourseError("--workers must be at least 1")
        return instructor.grade(course, args.assignment, args.student, args.workers, args.scheduler, args.fresh,
                                args.timeout, unsandboxed=args.unsandboxed, version=args.version, yes=args.yes)
    if name == "serve":
        if args.workers < 1:
            raise CourseError("--workers must be at least 1")
        if args.adapt is not None and args.scheduler not in ("local", "slurm"):
            raise CourseError("--adapt sizes a Dask cluster the service starts: give --scheduler local or "
                              "--scheduler slurm with it (a cluster at an address is sized by its own deployment)")
        from ..service.serve import serve

        return serve(course, args.workers, args.rescan, args.once, args.timeout, args.unsandboxed, args.scheduler,
                     args.adapt)
    if name == "feedback":
        return instructor.feedback(course, args.assignment, args.student, force=args.force)
    if name == "export":
        if args.format != "nbgrader":
            if args.exporter:
                raise CourseError("--exporter goes with the nbgrader format only, not with --format " + args.format)
            return instructor.export_for_lms(course, args.format, args.to)
        return instructor.export(course, args.to or Path("grades.csv"), args.exporter)
    if name == "lms":
        return lms.run(course, args)
    if name == "status":
        return status.status(course, args.assignment)
    if name == "report":
        from . import report

        report.report(course, args.assignment, args.csv)
        return 0
    if name == "similarity":
        from . import report

        report.similar(course, args.assignment, args.top)
        return 0
    raise AssertionError(name)


if __name__ == "__main__":
    sys.exit(main())
