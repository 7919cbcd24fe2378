"""`course extend` and `course extensions`: per-student deadlines (course_tools/extensions.py keeps
the grants; deadlines.deadline_of answers with them). Parsing and printing only."""
from __future__ import annotations

from course_student.words import plural

from ..course_dir import Course, CourseError
from ..table import format_table
from ..terminal import printable


def _say(text: str = "") -> None:
    print(printable(text), flush=True)


def add_commands(command) -> None:
    """Add extend and extensions to the `course` parser (``command``: cli/__init__.py's helper)."""
    sub = command("extend", "give students more time (and graded attempts) on an assignment, or take it back",
                  description="Give students their own deadline on an assignment: --until a date, or --by a "
                              "duration after the due date ('3d', '36h', or '50%' of the time between release "
                              "and due date). Every grant and revocation is kept (course extensions --history).")
    sub.add_argument("names", nargs="*", metavar="ID STUDENT",
                     help="the assignment id, then one or more student ids (with --all: only student ids; with "
                          "--section: students besides the section's, if any)")
    when = sub.add_mutually_exclusive_group(required=True)
    when.add_argument("--until", metavar="WHEN", help="the new deadline, with a time zone: '2027-03-29 13:00 UTC' "
                                                      "or '2027-03-29 13:00 Europe/Berlin' (without one, the "
                                                      "course's c.Course.timezone, if set)")
    when.add_argument("--by", metavar="DURATION", help="time after the due date: '3d', '36h', '1d12h', '90m', or "
                                                       "'50%%' of the time between release and due date")
    when.add_argument("--revoke", action="store_true", help="take the extension back (the due date applies again)")
    sub.add_argument("--all", action="store_true", help="every assignment in the gradebook that has a due date")
    sub.add_argument("--section", metavar="NAME", default=None,
                     help="every student of this section (the roster's 'section' column, from course init --roster)")
    sub.add_argument("--attempts", type=int, default=0, metavar="N",
                     help="graded attempts a day in the grading service on top of the policy's (default 0)")
    sub.add_argument("--reason", default="", metavar="TEXT", help="why (kept with the grant)")
    sub.add_argument("--shorten", action="store_true", help="allow a deadline before the assignment's due date")

    sub = command("extensions", "list the extensions in force (or, with --history, every grant and revocation)")
    sub.add_argument("assignment", nargs="?", default=None, help="one assignment (default: all)")
    sub.add_argument("--history", action="store_true", help="every grant and revocation, oldest first")


def extend(course: Course, args) -> int:
    from ..extensions import grant, revoke  # sqlalchemy: imported when the command runs (test_cli_startup)

    names = list(args.names)
    if args.all:
        assignments, students = None, names
    else:
        if not names:
            raise CourseError("give the assignment id: course extend ID STUDENT... (or --all STUDENT... for every "
                              "assignment)")
        assignments, students = [names[0]], names[1:]
    if args.section is not None:
        from ..sections import members

        students = students + members(course, args.section)
    if not students:
        raise CourseError("give at least one student id (course extend ID STUDENT...) or --section NAME")
    if args.revoke:
        if args.attempts or args.shorten:
            raise CourseError("--revoke takes back the whole extension: it goes without --attempts and --shorten")
        rows = revoke(course, assignments, students, args.reason)
        for row in rows:
            _say(f"revoked the extension of {row['student']} on {row['assignment']}: the due date applies again")
        _say("scores already in the gradebook change at the next `course grade`")
        return 0
    rows = grant(course, assignments, students, args.until, args.by, args.attempts, args.reason, args.shorten)
    for row in rows:
        extra = f", {plural(row['extra_attempts'], 'extra graded attempt')} a day" if row["extra_attempts"] else ""
        _say(f"{row['student']}: {row['assignment']} due {row['until']:%Y-%m-%d %H:%M} UTC{extra}")
    _say(f"{plural(len(rows), 'extension')} granted; scores already in the gradebook change at the next "
         f"`course grade`")
    return 0


def extensions(course: Course, assignment: str | None, history: bool) -> int:
    if assignment is not None:
        from course_student.errors import check_assignment

        check_assignment(assignment)
    from ..extensions import Extensions

    store = Extensions.of(course)
    rows = [] if store is None else (store.history(assignment) if history else store.in_force(assignment))
    if store is not None:
        store.close()
    if not rows:
        _say("no extensions" + (" yet" if history else " in force") + (f" on {assignment}" if assignment else ""))
        return 0
    table = [[g.assignment, g.student, f"{g.until:%Y-%m-%d %H:%M}" if g.until else "revoked", g.extra_attempts,
              g.reason, g.granted_by, f"{g.granted_at:%Y-%m-%d %H:%M}"] for g in rows]
    _say(format_table(["assignment", "student", "deadline (UTC)", "extra attempts", "reason", "by", "at (UTC)"],
                      table, right={3}))
    return 0
