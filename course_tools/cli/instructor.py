"""Instructor commands: init, build, release, collect, grade, feedback, export (status is
status.py's; extend and extensions are extend.py's).

Each wraps nbgrader's own step (so formgrader, the gradebook and nbgrader's exchange work as
instructors know them) and adds what nbgrader leaves out: the hidden suites graded in
parallel, a summary table, and errors that say what to do next.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime
import tempfile
import time
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from course_student.words import plural

from .. import inbound, release_versions, version_given
from ..course_dir import (Course, CourseError, bundle_exposures, check_assignment, ensure_exchange, error_lines,
                          init_course)
from ..deadlines import apply_to_gradebook, deadlines_of, early_feedback, open_late_windows
from ..grading.launch.fanout import Job, grade_jobs
from ..exchange_folders import check_course
from ..grading.results import BLANK_RELEASE, ResultStore
from ..grading.sandbox.bwrap import SandboxUnavailable, sandbox_kind
from ..grading.settings import GradingSettings
from ..table import format_table, late_text, points
from ..terminal import printable
from . import versions
from .status import grade_rows, uncollected


def _say(text: str = "") -> None:
    """Print a line of this command's output; what it quotes from submissions is made printable."""
    print(printable(text), flush=True)


# ---------------------------------------------------------------------------------- init / build
def init(directory: Path, course_id: str, exchange: Path | None, db_url: str | None,
         roster: Path | None = None) -> int:
    from ..hub import roster as rosters

    try:
        given = rosters.load(roster) if roster else None
    except (OSError, rosters.RosterError) as err:
        raise CourseError(f"the roster cannot be read: {err}") from None
    students = given.student_names() if given else []
    course = init_course(directory, course_id, exchange, db_url, students)
    if given and given.sections():
        from ..sections import record  # sqlalchemy: not before a command runs (test_cli_startup)

        record(course, given.sections())
    _say(f"course folder {course.root} (course id {course.course_id}, exchange {course.exchange}, "
         f"gradebook {course.db_url}), private to you (mode 0700)")
    for exposure in bundle_exposures():  # the students' accounts are not known here: a warning, not a refusal
        _say(f"warning: {exposure}\n  harmless on a machine of your own; where students have accounts, run that "
             f"command before they log in")
    if students:
        _say(f"{plural(len(students), 'student')} in the gradebook, with their names (from {roster})")
    _say(_student_install(course.root / "student-install"))
    _say(f"next: cd {course.root} && course release 01_forward_ops --due '2026-12-01 23:59 UTC'")
    return 0


def _student_install(out: Path) -> str:
    """Build the student install into ``out`` and say how to install it; a failed build is a
    warning (the course folder is made), with the command that builds it."""
    from ..student_package import BuildError, build_student_package, install_instructions

    try:
        return install_instructions(build_student_package(out))
    except BuildError as err:
        return (f"warning: the student install was not built: {err}\n"
                f"  build it with `course student-package --out {out}` before setting up the students' environment")


def build(assignments: list[str], check: bool, solutions: bool) -> int:
    from .. import build as builder

    args = [*assignments] + (["--check"] if check else []) + ([] if solutions else ["--no-solutions"])
    return builder.main(args)


# ---------------------------------------------------------------------------------- release
def _cells(path: Path) -> list:
    nb = nbformat.read(str(path), as_version=4)
    return [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in nb.cells]


def _register(course: Course, assignment: str) -> None:
    """Write the assignment's notebooks and cells into the gradebook (nbgrader's generate_assignment,
    into a scratch folder) and make sure the release students get is exactly that."""
    with tempfile.TemporaryDirectory(prefix="course-register-") as scratch:
        course.nbgrader_or_fail("generate_assignment", assignment, "--force",
                                f"--CourseDirectory.release_directory={scratch}",
                                what=f"registering {assignment} in the gradebook")
        for fresh in sorted((Path(scratch) / assignment).glob("*.ipynb")):
            released = versions.release_folder(course, assignment) / fresh.name
            if not released.exists() or _cells(fresh) != _cells(released):
                raise CourseError(f"assignments/{assignment}/{fresh.name} is older than source/{assignment}: "
                                  f"run `course build {assignment}` first")


def parse_due(text: str) -> datetime.datetime:
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text)
    except (ValueError, OverflowError) as err:
        raise CourseError(f"cannot read the due date {text!r} ({err}); write it like '2026-12-01 23:59 UTC'") from None


def release(course: Course, assignment: str, due: str | None, force: bool = False) -> int:
    check_assignment(assignment)
    ensure_exchange(course.exchange)
    reveals = open_late_windows(course, assignment)
    for line in reveals:
        _say(f"warning: {line}")
    if reveals and not force:
        raise CourseError(f"not releasing {assignment}: it would reveal the solution of an assignment that still "
                          f"accepts late work (see the warning above). Release it later, or now with "
                          f"`course release {assignment} --force`")
    versions.check_new_version(course, assignment, uncollected(course, assignment, set()), force, _say)
    _say(f"registering {assignment} in the gradebook ...")
    _register(course, assignment)
    if due is not None:
        with course.gradebook() as gradebook:
            gradebook.update_or_create_assignment(assignment, duedate=parse_due(due))
    version = release_versions.record(course.root, assignment, versions.release_folder(course, assignment))
    # The copy alone: CourseRelease (the configured exchange class) runs `course release` itself
    # when nbgrader's release is started anywhere else (formgrader's Release button).
    from ..exchange_release import THROUGH_COURSE

    course.nbgrader_or_fail("release_assignment", assignment, "--force", THROUGH_COURSE,
                            what=f"releasing {assignment}")
    outbound = course.exchange / course.course_id / "outbound" / assignment
    for problem in release_versions.label_notebooks(outbound, version):
        _say(f"warning: the released notebook carries no version label ({problem}); its cells still say "
             f"which version it is")
    with course.gradebook() as gradebook:
        duedate = gradebook.find_assignment(assignment).duedate
    when = f"due {duedate:%Y-%m-%d %H:%M} UTC" if duedate else f"no due date: course release {assignment} --due ..."
    _say(f"released {assignment} {version.label} to {outbound} ({when})")
    return 0


# ---------------------------------------------------------------------------------- collect
def collect(course: Course, assignment: str) -> int:
    """Collect the latest genuine submission of each student from the exchange (inbound.py: never
    nbgrader's collect, which follows links and trusts the folders' names and times); what is
    refused is listed, kept for `course status` and `course report`, and makes the exit status 1."""
    from nbgrader.coursedir import CourseDirectory

    check_assignment(assignment)
    check_course(course.exchange, course.course_id, ("inbound",))   # the grader's, not a student's (exchange_folders.py)
    inbound_folder = course.exchange / course.course_id / "inbound"
    if not inbound_folder.is_dir():
        raise CourseError(f"no inbound folder {inbound_folder}: release an assignment first (course release <id>)")
    settings = CourseDirectory(config=course.config)
    outcome = inbound.collect(inbound_folder, course.folder("submitted"), assignment,
                              ignore=list(settings.ignore), max_bytes=settings.max_file_size * 1024)
    inbound.save_refusals(course.root, assignment, outcome.refused)
    for student, first in outcome.first_seen.items():  # the release dates' evidence (version_given.py)
        try:
            version_given.note(course.root, assignment, student, submitted=first)
        except release_versions.VersionError as err:
            _say(f"warning: {err}")
    if not outcome.collected and not outcome.refused:
        _say(f"no submissions of {assignment} in {inbound_folder} yet")
        return 0
    due = _duedate(course, assignment)
    own = deadlines_of(course, assignment, due)   # students with an extension: their own deadline
    rows = []
    for got in outcome.collected:
        mine = own[got.student].due if got.student in own else due
        late = (got.recorded - mine).total_seconds() if mine else 0
        notes = [got.note] + [f"left out {path}" for path in got.left_out]
        rows.append([got.student, f"{got.recorded:%Y-%m-%d %H:%M:%S}", late_text(late),
                     "; ".join(n for n in notes if n)])
    rows += [[r.student, "-", "", f"REFUSED {r.folder}: {r.reason}"] for r in outcome.refused]
    _say(format_table(["student", "submitted (UTC)", "late", "note"], rows))
    _say(f"\n{plural(len(outcome.collected), 'submission')} of {assignment} in {course.folder('submitted')}; "
         f"next: course grade {assignment}")
    if outcome.refused:
        _say(f"REFUSED {plural(len(outcome.refused), 'folder')} in the exchange (listed above, and in `course status "
             f"{assignment}` and the report): nothing of them was collected or graded. Where the student has an "
             f"earlier genuine submission, that one was collected instead.")
        return 1
    return 0


def _duedate(course: Course, assignment: str):
    from nbgrader.api import MissingEntry

    try:
        with course.gradebook() as gradebook:
            return gradebook.find_assignment(assignment).duedate
    except (MissingEntry, CourseError):
        return None


def grade(course: Course, assignment: str, students: list[str] | None, workers: int, scheduler: str | None,
          fresh: bool, timeout: int | None, progress: bool = True, unsandboxed: bool = False,
          version: str = "own", yes: bool = False) -> int:
    check_assignment(assignment)
    course.gradebook()  # fails early, saying what to do, when nothing was released
    collected = course.submitted_students(assignment)
    if students:
        missing = sorted(set(students) - set(collected))
        if missing:
            raise CourseError(f"no collected submission of {assignment} from {', '.join(missing)} "
                              f"(collected: {', '.join(collected) or 'none'}); run `course collect {assignment}`")
        collected = [s for s in collected if s in students]
    if not collected:
        raise CourseError(f"no submissions of {assignment} in {course.folder('submitted')}: "
                          f"run `course collect {assignment}` first")
    settings = GradingSettings.current(unsandboxed=True if unsandboxed else None, notebook_seconds=timeout,
                                       course_root=course.root, grade_on=version)
    if not scheduler:  # one message for the run, not one grading error per student (on Dask, each worker checks)
        require_sandbox(settings.unsandboxed)
    store = ResultStore(course.root)
    if fresh:
        store.clear(assignment)
    released = versions.release_folder(course, assignment)
    notebooks = [p.name for p in sorted(released.glob("*.ipynb"))]
    jobs = [Job(student, assignment, course.folder("submitted") / student / assignment / name,
                _collected_at(course.folder("submitted") / student / assignment))
            for student in collected for name in notebooks
            if (course.folder("submitted") / student / assignment / name).exists()]
    # The blank release too (once; untouched submissions share its result): `course report` flags
    # a hidden check that a blank release passes.
    jobs += [Job(BLANK_RELEASE, assignment, released / name, anonymous=True) for name in notebooks]
    where = f"the Dask cluster at {scheduler}" if scheduler else f"{plural(workers, 'worker')}"
    _say(f"grading {plural(len(collected), 'submission')} of {assignment}: hidden suites on {where}")
    started = time.perf_counter()
    try:
        fanout = grade_jobs(jobs, store, settings, workers=workers, scheduler=scheduler, progress=progress)
    except RuntimeError as err:  # no Dask, or its scheduler cannot be reached
        raise CourseError(str(err)) from None
    grading_errors: dict[str, str] = {}
    for job, why in fanout.failed:
        if job.student != BLANK_RELEASE:
            grading_errors.setdefault(job.student, f"{job.notebook.name}: {why}")
    suites_seconds = time.perf_counter() - started
    if version == "latest" and not yes:
        # The consequences first: nothing reaches the gradebook until the instructor agrees.
        own = dataclasses.replace(settings, grade_on="own")
        grade_jobs([j for j in jobs if j.student != BLANK_RELEASE], store, own, workers=workers,
                   scheduler=scheduler, progress=progress)
        _say(versions.latest_consequences(course, assignment, [j for j in jobs if j.student != BLANK_RELEASE],
                                          store, own, settings))
        _say(f"\nnothing was stored in the gradebook. To store these scores, graded on the latest version: "
             f"course grade {assignment} --version latest --yes")
        return 1
    store.set_grading_errors(assignment, grading_errors, [s for s in collected if s not in grading_errors])

    started = time.perf_counter()
    api = course.api(unsandboxed=settings.unsandboxed, grade_on=version)
    problems = {}
    to_autograde = [student for student in collected if student not in grading_errors]
    apply_to_gradebook(course, assignment, to_autograde)   # each student's own deadline, for the late penalty
    for student in tqdm(to_autograde, desc="gradebook", unit="student", disable=not progress):
        outcome = api.autograde(assignment, student, force=True, create=True)
        if not outcome.get("success"):
            problems[student] = _api_problem(outcome)
    gradebook_seconds = time.perf_counter() - started
    _say(grade_table(course, assignment, to_autograde, problems))
    _say(f"\n{plural(fanout.graded, 'notebook')} graded now, {fanout.reused} reused from earlier gradings "
         f"(same code, same hidden suites): hidden suites {suites_seconds:.1f} s, gradebook "
         f"{gradebook_seconds:.1f} s. Next: course feedback {assignment}")
    if unsandboxed:
        _say("WARNING: graded --unsandboxed: the submissions' code ran without bubblewrap, able to read every "
             "world-readable file of this machine; only resource limits and a cgroup contained it.")
    status = 0
    if grading_errors:
        _say(f"\nGRADING ERRORS: the grader could not grade {plural(len(grading_errors), 'submission')}; nothing was stored "
             f"for them (these are not scores):")
        for student, why in sorted(grading_errors.items()):
            _say(f"  {student}: {why[:400]}")
        _say(f"fix the cause, then run `course grade {assignment} --student <id>`")
        status = 1
    if problems:
        _say(f"{plural(len(problems), 'submission')} could not be graded: see the table; fix or ask the student, "
             f"then run `course grade {assignment} --student <id>`")
        status = 1
    return status


def _collected_at(folder: Path) -> str | None:
    """When the collected submission in ``folder`` was received (ISO), for the version evidence."""
    from ..submission_times import collected_time

    when = collected_time(folder)
    return when.isoformat() if when else None


def require_sandbox(unsandboxed: bool = False) -> None:
    """Stop with one CourseError when this machine cannot start the grading sandbox (no bubblewrap)."""
    try:
        sandbox_kind(unsandboxed)
    except SandboxUnavailable as err:
        raise CourseError(f"cannot grade on this machine: {err}") from None


def _api_problem(outcome: dict) -> str:
    """One line: why a step of nbgrader's API failed for one student."""
    return error_lines((outcome.get("error") or "") + "\n" + (outcome.get("log") or ""), keep=1)[0][:160]


def grade_table(course: Course, assignment: str, students: list[str], problems: dict | None = None) -> str:
    problems = problems or {}
    table = []
    for row in grade_rows(course, assignment, students):
        note = problems.get(row["student"], "")
        if row["manual"] and not note:
            note = "written answers to grade (formgrader)"
        table.append([row["student"], points(row["score"], row["max_score"]),
                      f"-{row['penalty']:g}" if row["penalty"] else "", late_text(row["late_seconds"]),
                      points(row["final"], row["max_score"]), note])
    return format_table(["student", "autograded", "penalty", "late", "final", "note"], table, right={1, 2, 4})


# ---------------------------------------------------------------------------------- feedback
def feedback(course: Course, assignment: str, students: list[str] | None, progress: bool = True,
             force: bool = False) -> int:
    """nbgrader generate_feedback and release_feedback, student by student (one broken
    submission does not stop the others); refused, unless ``force``, while a student with an
    extension can still earn points and a classmate would get their feedback."""
    check_assignment(assignment)
    graded = sorted(p.parent.name for p in course.folder("autograded").glob(f"*/{assignment}") if p.is_dir())
    graded = [student for student in graded if not students or student in students]
    if not graded:
        raise CourseError(f"no graded submissions of {assignment}{' from ' + ', '.join(students) if students else ''}"
                          f": run `course grade {assignment}` first")
    early = early_feedback(course, assignment, graded)
    for line in early:
        _say(f"warning: {line}")
    if early and not force:
        raise CourseError(f"not releasing feedback on {assignment}: a student with an extension can still submit "
                          f"(see the warning above). Release it after their deadline, or only to them "
                          f"(--student), or now with `course feedback {assignment} --force`")
    api = course.api(feedback_checked=True)
    problems = {}
    for student in tqdm(graded, desc="feedback", unit="student", disable=not progress):
        for step in (api.generate_feedback, api.release_feedback):
            outcome = step(assignment, student)
            if not outcome.get("success"):
                problems[student] = f"{step.__name__}: {_api_problem(outcome)}"
                break
    for student, why in problems.items():
        _say(f"  no feedback for {student}: {why}")
    done = len(graded) - len(problems)
    _say(f"feedback for {plural(done, 'student')} in {course.folder('feedback')}/<student>/{assignment}/, "
         f"released to the exchange: students run `course fetch {assignment} --feedback`")
    return 1 if problems else 0


# ---------------------------------------------------------------------------------- export
def export(course: Course, to: Path, exporter: str | None = None) -> int:
    course.gradebook()
    to = Path(to).resolve()
    course.nbgrader_or_fail("export", f"--to={to}", *([f"--exporter={exporter}"] if exporter else []),
                            what="exporting grades")
    if exporter:  # another plugin's format: say where it went, do not parse it
        _say(f"grades exported by {exporter} to {to}")
        return 0
    with open(to, newline="") as handle:
        rows = list(csv.DictReader(handle))
    def number(text):
        try:
            return f"{float(text):.4g}"
        except (TypeError, ValueError):
            return text or ""

    table = [[r["assignment"], r["student_id"], number(r["raw_score"]), number(r["late_submission_penalty"]),
              number(r["score"]), number(r["max_score"])] for r in rows]
    _say(format_table(["assignment", "student", "autograded", "late penalty", "score", "max"], table,
                      right={2, 3, 4, 5}))
    _say(f"\n{plural(len(rows), 'row')} written to {to}")
    return 0


def export_for_lms(course: Course, kind: str, to: Path | None) -> int:
    """Canvas's or Moodle's grade import file, with grades.csv's scores (course_tools/lms/import_csv.py)."""
    from ..lms.import_csv import write

    to = Path(to or f"grades-{kind}.csv").resolve()
    students = write(course, kind, to)
    _say(f"{plural(students, 'student')} written to {to}, as {kind.title()}'s grade import file (docs/lms.md says "
         f"how to import it)")
    return 0
