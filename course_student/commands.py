"""Student and self-paced commands: fetch, submit (nbgrader's exchange) and check (offline).

On a JupyterHub the course id and exchange usually come from the hub's nbgrader configuration
(/etc/jupyter/nbgrader_config.py); --course-id and --exchange override it, and --student
names the student where the account name is not the student id (shared accounts, tests).
Both fetch and submit then say the student's own deadline where the course's grading service
answers (deadlines.py), with a warning when it is past or less than an hour away.
"""
from __future__ import annotations

import datetime
import sys
from pathlib import Path

from . import deadlines
from .check import CheckError, check_notebook
from .check_report import format_report
from .errors import CourseError, check_assignment
from .nbgrader_run import run_nbgrader


def _exchange_args(course_id: str | None, exchange: Path | None, student: str | None) -> list[str]:
    args = []
    if course_id:
        args.append(f"--CourseDirectory.course_id={course_id}")
    if exchange:
        args.append(f"--Exchange.root={Path(exchange).resolve()}")
    if student:
        args.append(f"--student={student}")
    return args


def _nbgrader(step: str, assignment: str, where: Path, extra: list[str], what: str) -> str:
    return run_nbgrader([step, assignment, *extra], where, what, timeout=600,
                        hint="\nIs the course id right (--course-id), and has the instructor released it?")


def fetch(assignment: str, feedback: bool, where: Path, course_id, exchange, student) -> int:
    check_assignment(assignment)
    where = Path(where).resolve()
    extra = _exchange_args(course_id, exchange, student)
    if feedback:
        _nbgrader("fetch_feedback", assignment, where, extra, f"fetching feedback of {assignment}")
        pages = sorted((where / assignment / "feedback").glob("*/*.html"))
        if not pages:
            print(f"no feedback for {assignment} yet (it appears once your instructor releases it)")
            return 1
        print(f"feedback of {assignment}: {pages[-1]}")
        return 0
    if (where / assignment).exists():
        raise CourseError(f"{where / assignment} exists already; nbgrader will not overwrite your work. "
                          f"Rename it if you want a fresh copy.")
    _nbgrader("fetch_assignment", assignment, where, extra, f"fetching {assignment}")
    print(f"fetched {assignment} into {where / assignment}; open {assignment}.ipynb there, and run "
          f"`course check {where / assignment / (assignment + '.ipynb')}` before you submit")
    say_deadline(assignment, submitting=False)
    return 0


def submit(assignment: str, where: Path, course_id, exchange, student) -> int:
    check_assignment(assignment)
    where = Path(where).resolve()
    if not (where / assignment).is_dir():
        raise CourseError(f"no folder {where / assignment} to submit: run this where you fetched the assignment "
                          f"(or pass --path)")
    notebook = where / assignment / f"{assignment}.ipynb"
    if not notebook.exists():
        found = sorted(p.name for p in (where / assignment).glob("*.ipynb"))
        raise CourseError(f"{notebook} is missing (found: {', '.join(found) or 'no notebooks'}); only the notebook "
                          f"named as released is graded: rename your work back to {notebook.name}")
    log = _nbgrader("submit", assignment, where, _exchange_args(course_id, exchange, student),
                    f"submitting {assignment}")
    stamp = next((line.split("Submitted as:")[1].strip() for line in log.splitlines() if "Submitted as:" in line), "")
    print(f"submitted {assignment} ({stamp}). You may submit again before the deadline: the last one counts.")
    say_deadline(assignment, submitting=True)
    return 0


def say_deadline(assignment: str, submitting: bool) -> None:
    """Print the student's own deadline for ``assignment`` (stdout) and any warning (stderr);
    nothing where no grading service is there to ask."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    lines, warnings = deadlines.lines_for(deadlines.ask(), assignment, now, submitting)
    for line in lines:
        print(line)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def check(notebook: Path, timeout: int, progress: bool = True) -> int:
    try:
        report = check_notebook(Path(notebook), timeout=timeout, progress=progress)
    except CheckError as err:
        raise CourseError(str(err)) from None
    print(format_report(report))
    return 0 if report.passed else 1
