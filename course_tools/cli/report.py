"""`course report` and `course similarity`: what the instructor learns from a graded assignment."""
from __future__ import annotations

import time
from pathlib import Path

import nbformat

from course_student.words import plural

from ..build import release_notebook
from ..course_dir import Course, CourseError, check_assignment
from ..report import data as report_data
from ..report import similarity
from ..report.page import Report, similarity_html
from ..terminal import printable


def _say(text: str = "") -> None:
    """Print a line of this command's output; what it quotes from submissions is made printable."""
    print(printable(text), flush=True)


def _due(course: Course, assignment: str):
    from nbgrader.api import MissingEntry

    try:
        with course.gradebook() as gradebook:
            return gradebook.find_assignment(assignment).duedate
    except MissingEntry:
        return None


def report(course: Course, assignment: str, csv_path: Path | None = None, quiet: bool = False) -> Path:
    """Print the summary, write the HTML page next to the gradebook (and the CSV if asked); the page's path."""
    check_assignment(assignment)
    course.gradebook()
    data = report_data.load(course, assignment)
    if not data.students:
        raise CourseError(f"no submissions of {assignment} yet: course collect {assignment}, then course grade")
    from ..lms import summary as lms_summary

    lms = lms_summary.lines(course, assignment)   # what the LMS holds and what is pending (no request)
    result = Report(data, report_data.progress(course), _due(course, assignment), lms)
    page = report_data.reports_folder(course) / f"{assignment}.html"
    page.write_text(result.html())
    if not quiet:
        _say(result.summary())
    from .versions import mixed_versions_note

    mixed = mixed_versions_note(course, assignment)
    if mixed:
        _say(f"\n{mixed}")
    if not quiet:
        _say_attempts(course, assignment)
    if lms and not quiet:
        _say("\n" + "\n".join(lms))
    _say(f"\nreport: {page}")
    if csv_path is not None:
        rows = result.write_csv(csv_path)
        _say(f"per-check table: {csv_path} ({rows} rows)")
    return page


def similar(course: Course, assignment: str, top: int = 10) -> Path:
    check_assignment(assignment)
    release = nbformat.read(str(release_notebook(assignment)), as_version=4)
    name = release_notebook(assignment).name
    submissions = {}
    for student in course.submitted_students(assignment):
        path = course.folder("submitted") / student / assignment / name
        try:
            submissions[student] = nbformat.read(str(path), as_version=4)
        except Exception:  # noqa: BLE001 - an unreadable notebook has no code to compare
            continue
    if len(submissions) < 2:
        raise CourseError(f"fewer than two readable submissions of {assignment}: nothing to compare")
    start = time.perf_counter()
    codes, given = similarity.codes_of(submissions, release)
    pairs = similarity.compare(codes, given)
    seconds = time.perf_counter() - start
    from ..table import format_table

    rows = [[f"{p.a} & {p.b}", f"{100 * p.similarity:.0f}%", str(p.shared)] for p in pairs[:top]]
    _say(format_table(["pair", "similarity", "shared"], rows, right={1, 2}) if rows else "no similar pairs")
    page = report_data.reports_folder(course) / f"{assignment}-similarity.html"
    page.write_text(similarity_html(assignment, pairs, {c.student: c for c in codes}, seconds=seconds))
    _say(f"\n{plural(len(submissions), 'submission')} compared in {seconds:.1f} s; side by side: {page}")
    return page


def _say_attempts(course: Course, assignment: str) -> None:
    """Attempts before the deadline (course serve's queue): per student, and per task how many it
    took to reach full marks and which task held students up longest."""
    from ..service.queue import Queue
    from ..service.stats import attempts, held_up_longest
    from ..table import format_table

    rows = Queue.rows_if_served(course.db_url, assignment)
    if rows is None:
        return
    found = attempts(rows)
    if not found["per_student"]:
        return
    _say("\nAttempts before the deadline (course serve): "
         + ", ".join(f"{s} {n}" for s, n in found["per_student"].items()))
    rows = []
    for task, entry in found["per_task"].items():
        full = entry["to_full"]
        rows.append([task, f"{sum(full) / len(full):.1f}" if full else "-", max(full, default="-"), entry["never"]])
    _say(format_table(["task", "mean attempts to full marks", "most", "never full"], rows, right={1, 2, 3}))
    longest = held_up_longest(found["per_task"])
    if longest:
        _say(f"the task that held students up longest: {longest}")
