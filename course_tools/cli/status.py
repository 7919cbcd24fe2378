"""`course status`: where each assignment stands (released, due, late work until, waiting in the
exchange, refused at collect, collected, graded, manual grading, the mean), or one assignment
student by student; with the grading service's queue when `course serve` has run.

Also the two readings of where things stand that other commands use: the gradebook's rows of an
assignment (grade_rows: `course grade`'s table) and the students whose submission waits in the
exchange uncollected (uncollected: `course release` asks before replacing what they hold).
Parsing and printing only.
"""
from __future__ import annotations

from course_student.words import plural

from .. import inbound, release_versions
from ..course_dir import Course, CourseError, check_assignment
from ..deadlines import deadlines_of, late_window_end, open_late_windows
from ..table import format_table, late_text, points
from ..terminal import printable
from . import versions


def _say(text: str = "") -> None:
    """Print a line of this command's output; what it quotes from submissions is made printable."""
    print(printable(text), flush=True)


def add_commands(command) -> None:
    """Add status to the `course` parser (``command``: cli/__init__.py's helper)."""
    sub = command("status", "who submitted, who is graded, what needs manual grading")
    sub.add_argument("assignment", nargs="?", default=None, help="one assignment in detail (default: an overview)")


def status(course: Course, assignment: str | None) -> int:
    with course.gradebook() as gradebook:
        known = {a.name: a.duedate for a in gradebook.assignments}
        students = [s.id for s in gradebook.students]
    if assignment is not None:
        check_assignment(assignment)
        if assignment not in known:
            raise CourseError(f"{assignment} is not in the gradebook yet: run `course release {assignment}`")
        return _status_of(course, assignment, known[assignment])
    rows = []
    for name, due in known.items():
        collected = course.submitted_students(name)
        graded = [r for r in grade_rows(course, name, collected) if r["score"] is not None]
        finals = [r["final"] for r in graded]
        released = _released(course, name)
        end = late_window_end(course, due)
        rows.append([name, "yes" if released else "no", f"{due:%Y-%m-%d %H:%M}" if due else "-",
                     f"{end:%Y-%m-%d %H:%M}" if end else ("-" if due is None else "no end"),
                     len(uncollected(course, name, set(collected))), len(inbound.load_refusals(course.root, name)),
                     len(collected), len(graded), sum(r["manual"] for r in graded),
                     f"{sum(finals) / len(finals):.1f}" if finals else "-"])
    _say(format_table(["assignment", "released", "due (UTC)", "late work until", "waiting", "refused", "collected",
                       "graded", "manual", "mean"], rows, right={4, 5, 6, 7, 8, 9}))
    _say(f"\n{plural(len(students), 'student')} in the gradebook. 'waiting': submitted but not collected "
         f"(course collect <id>); 'refused': exchange folders collect refused (links, special files, another "
         f"account's folder: course status <id> says which); 'manual': written answers to grade in formgrader; "
         f"'late work until': the last moment a late submission earns points.")
    _say_release_order(course, known)
    _say_service_queue(course, None)
    _say_lms(course, None)
    return 0


def _say_lms(course: Course, assignment: str | None) -> None:
    """What the LMS holds (course lms push), when a push has run: per assignment, or for one
    assignment also who the next push would send and why."""
    from ..lms import summary

    found = summary.overview(course) if assignment is None else summary.lines(course, assignment)
    if found and assignment is None:
        _say("\nLMS (course lms push; `course status <id>` says what the next push would send):")
    if found:
        _say(("" if assignment is None else "\n") + "\n".join(found))


def _say_service_queue(course: Course, assignment: str | None) -> None:
    """The grading service's queue (course serve), when it has run: states, today's waits, errors."""
    from ..service.heartbeat import grading_hosts
    from ..service.queue import Queue, utcnow
    from ..service.stats import queue_summary

    if course.db_url.startswith("sqlite:///") and not course.gradebook_exists():
        return
    queue = Queue.existing(course.db_url)
    if queue is None:
        return
    try:
        rows, hosts = queue.rows(assignment), grading_hosts(queue)
    finally:
        queue.close()
    summary = queue_summary(rows)
    waits = (f"; today's wait from submit to feedback: median {summary['median_wait']:.0f} s, p95 "
             f"{summary['p95_wait']:.0f} s" if summary["median_wait"] is not None else "")
    retrying = f" ({summary['retrying']} of them to be retried after a grading error)" if summary["retrying"] else ""
    _say(f"\ngrading service (course serve){' for ' + assignment if assignment else ''}: {summary['waiting']} "
         f"waiting{retrying}, {summary['grading']} grading, {summary['done']} done, "
         f"{plural(summary['errors'], 'grading error')}{waits}")
    if hosts:
        now = utcnow()
        dead = sum(host.dead(now) for host in hosts)
        _say(f"grading hosts seen in the last 24 h: {len(hosts)}" + (f", {dead} DEAD (not seen for longer than its lease; the "
                                                           f"others take its rows back)" if dead else ""))
        for host in hosts:
            _say(host.line(now))
    for row in summary["retry_rows"][:20]:
        _say(f"  RETRY {row['student']} {row['assignment']} ({row['folder']}) after {row['attempts']} failed "
             f"tr{'y' if row['attempts'] == 1 else 'ies'}: {(row['error'] or '')[:300]}")
    for row in summary["error_rows"][:20]:
        _say(f"  GRADING ERROR {row['student']} {row['assignment']} ({row['folder']}): {(row['error'] or '')[:300]}")


def _released(course: Course, assignment: str) -> bool:
    """Whether the assignment is in the exchange's outbound folder (students can fetch it)."""
    return (course.exchange / course.course_id / "outbound" / assignment).is_dir()


def _say_release_order(course: Course, known: dict) -> None:
    """Releases that have revealed, or would reveal, the solution of an assignment still open to late work."""
    from course_lib.tasks import ASSIGNMENTS

    order = list(ASSIGNMENTS)
    for name in order[1:]:
        released = _released(course, name)
        if name in known and released:
            for line in open_late_windows(course, name):
                _say(f"revealed: {name} is released and {line}")
    later = [name for name in order if name not in known and order.index(name) > 0]
    if later:
        following = later[0]
        for line in open_late_windows(course, following):
            _say(f"next release: {line}; `course release {following}` asks for --force until then")


def _status_of(course: Course, assignment: str, due) -> int:
    collected = course.submitted_students(assignment)
    waiting = uncollected(course, assignment, set(collected))
    own = {s: f"{d.due:%Y-%m-%d %H:%M}" for s, d in deadlines_of(course, assignment, due).items() if d.differs}
    rows = []
    for row in grade_rows(course, assignment, collected):
        has_feedback = any((course.folder("feedback") / row["student"] / assignment).glob("*.html"))
        state = "not graded" if row["score"] is None else ("manual grading" if row["manual"] else "graded")
        rows.append([row["student"], state, points(row["final"], row["max_score"]), late_text(row["late_seconds"]),
                     "yes" if has_feedback else "", versions.version_of_submission(course, assignment, row["student"])])
    rows += [[student, "submitted, not collected", "-", "", "", ""] for student in waiting]
    rows += [[r.student, f"REFUSED at collect: {r.folder}: {r.reason}", "-", "", "", ""]
             for r in inbound.load_refusals(course.root, assignment)]
    listed = {row[0] for row in rows}
    rows += [[student, "no submission yet", "-", "", "", ""] for student in sorted(own) if student not in listed]
    rows = [row + [own.get(row[0], "")] for row in rows]   # the student's own deadline, where it differs
    _say(f"{assignment}: due {due:%Y-%m-%d %H:%M} UTC" if due else f"{assignment}: no due date")
    latest = release_versions.latest(course.root, assignment)
    if latest is not None:
        _say(f"released version {latest.label} (recorded {latest.manifest['recorded']})")
    _say(format_table(["student", "state", "final", "late", "feedback", "version", "own deadline (UTC)"], rows,
                      right={2}) if rows
         else "no submissions yet")
    _say_service_queue(course, assignment)
    _say_lms(course, assignment)
    return 0


# ------------------------------------------------------------------ read by release and grade too
def grade_rows(course: Course, assignment: str, students: list[str]) -> list[dict]:
    """One row per student from the gradebook: score, penalty, final, manual grading."""
    from nbgrader.api import MissingEntry

    rows = []
    with course.gradebook() as gradebook:
        for student in students:
            try:
                sub = gradebook.find_submission(assignment, student)
            except MissingEntry:
                rows.append({"student": student, "score": None, "max_score": None, "penalty": 0.0, "final": None,
                             "late_seconds": 0.0, "manual": False})
                continue
            penalty = sub.late_submission_penalty or 0.0
            rows.append({"student": student, "score": sub.score, "max_score": sub.max_score, "penalty": penalty,
                         "final": sub.score - penalty, "late_seconds": sub.total_seconds_late,
                         "manual": bool(sub.needs_manual_grade)})
    return rows


def uncollected(course: Course, assignment: str, collected: set[str]) -> list[str]:
    """Students with a folder in the exchange that the latest collect neither collected nor refused."""
    refused = {r.folder for r in inbound.load_refusals(course.root, assignment)}
    try:
        names = [p.name for p in (course.exchange / course.course_id / "inbound").iterdir()]
    except OSError:
        return []
    parts = [name.split("+") for name in names if name not in refused]
    return sorted({n[0] for n in parts if len(n) >= 3 and n[1] == assignment and n[0] not in collected})
