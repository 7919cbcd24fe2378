"""The student commands of `course` (fetch, submit, check) and the student-only `course` command.

The full bundle's `course` (course_tools/cli) adds these same commands to its own parser with
``add_commands`` and runs them with ``run``; the student install's `course` is ``main`` here,
which knows no other command.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_lib import tasks

from . import commands
from .errors import CourseError

NAMES = ("fetch", "submit", "check")
EPILOG = "Assignments: " + ", ".join(tasks.ASSIGNMENTS)


def add_commands(subparsers, epilog: str = EPILOG) -> None:
    """Add fetch, submit and check to ``subparsers`` (what ``add_subparsers`` returned)."""
    for name, text in (("fetch", "fetch an assignment (or, with --feedback, its feedback) from the exchange"),
                       ("submit", "submit your assignment folder to the exchange")):
        sub = subparsers.add_parser(name, help=text, description=text, epilog=epilog)
        sub.add_argument("assignment")
        if name == "fetch":
            sub.add_argument("--feedback", action="store_true", help="fetch the feedback of a graded submission")
        sub.add_argument("--path", type=Path, default=Path("."), help="the folder holding <assignment>/ (default .)")
        sub.add_argument("--course-id", default=None, help="the course id (default: your nbgrader configuration)")
        sub.add_argument("--exchange", type=Path, default=None, help="the exchange root (default: your nbgrader configuration)")
        sub.add_argument("--student", default=None, help="your student id, where it is not your account name")

    text = "run a notebook's visible checks in a fresh kernel and report each task (exit status 1 if any fails)"
    sub = subparsers.add_parser("check", help=text, description=text, epilog=epilog)
    sub.add_argument("notebook", type=Path)
    sub.add_argument("--timeout", type=int, default=600, help="seconds one cell may take (default 600)")


def run(args) -> int:
    """Run the student command that ``args`` (parsed by a parser with ``add_commands``) names."""
    if args.command == "fetch":
        return commands.fetch(args.assignment, args.feedback, args.path, args.course_id, args.exchange, args.student)
    if args.command == "submit":
        return commands.submit(args.assignment, args.path, args.course_id, args.exchange, args.student)
    if args.command == "check":
        return commands.check(args.notebook, args.timeout)
    raise AssertionError(f"{args.command} is not a student command")


def fail(message: str) -> int:
    """Print ``error: message`` to stderr; the exit status of a command that could not do its job."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course", description="The deep-learning systems course, for students: fetch an assignment, "
                                   "check your notebook, submit it, fetch your feedback.",
        epilog="Run `course <command> --help` for each command. " + EPILOG)
    add_commands(parser.add_subparsers(dest="command", metavar="<command>"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """The student install's `course` command."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return run(args)
    except CourseError as err:
        return fail(str(err))
    except KeyboardInterrupt:
        return fail("interrupted")


if __name__ == "__main__":
    sys.exit(main())
