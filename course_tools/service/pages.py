"""The pages a student fetches from the grading service, one per submitted notebook.

Each is a small, self-contained HTML page (no script, no outside resource) whose every piece of
text, the checks' messages included, is escaped: a message may quote the student's own values,
and the page must never run anything. What a page shows follows the policy (policy.py):

    graded_page     checks: per task passed/failed, the first failing check's message and the
                    diagnosis; scores: the same with points
    receipt_page    feedback "none", a submission past the daily limit, an assignment closed

The graded page and the receipt say the student's own deadline (deadline_note: an extension's
date, the course's time zone beside UTC, and whether this submission came after it).
    mistake_page    the student's own mistake keeps it from being graded (mistakes.py)
    pending_page    in the queue: how many are ahead and about how long
    error_page      the grader failed: "not graded yet: the course staff have been told"

Nothing here comes from the hidden tests but their checks' one-line descriptions and failure
messages, which nbgrader's feedback shows too (suite.py's feedback_text).
"""
from __future__ import annotations

import datetime
from html import escape

from course_student.times import duration as _late_by
from course_student.times import in_zone as _in_zone
from course_student.words import plural

from ..grading.target import task_note, version_note

STYLE = ("body{font-family:sans-serif;max-width:54em;margin:2em auto;line-height:1.45}"
         ".pass{color:#1a7f37}.fail{color:#b42318}.note{background:#f6f8fa;padding:.6em 1em;border-radius:4px}"
         "pre{white-space:pre-wrap;background:#f6f8fa;padding:.5em}")
NOT_GRADED_YET = "not graded yet: the course staff have been told"


# The queue's page reloads itself this often. The course's JupyterLab extension
# (hub/labextensions/course-feedback-link) fetches the feedback again meanwhile, while the page it
# opened carries PENDING_MARK, so the page a student opened once turns into the graded one.
PENDING_RELOAD_SECONDS = 5
PENDING_MARK = "course-feedback-pending"


def _page(title: str, body: list[str], head: str = "") -> str:
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
            f"{head}<title>{escape(title)}</title><style>{STYLE}</style></head>\n<body>\n" + "\n".join(body)
            + "\n</body></html>\n")


def _when(moment: datetime.datetime) -> str:
    # To the second: a student who submits twice in a minute must tell the two pages apart.
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def _head(assignment: str, submitted_at: datetime.datetime) -> list[str]:
    head = [f"<h1>{escape(assignment)}: feedback on your submission of {escape(_when(submitted_at))}</h1>"]
    if submitted_at.microsecond:   # the Assignments tab lists nbgrader's timestamp to the microsecond
        head.append(f"<p>Submitted at {submitted_at:%Y-%m-%d %H:%M:%S.%f} UTC, as the Assignments tab lists it.</p>")
    return head


def attempts_note(used: int, per_day: int, counted: bool, submitted_at: datetime.datetime) -> str:
    """What a graded page says of the day's graded attempts: whether this submission used one,
    how many are left, and when the next is possible once none is."""
    day = "today (UTC day)"
    if counted:
        note = f"This submission used graded attempt {used} of {per_day} {day}."
    else:
        note = (f"This notebook was graded before (its result was kept), so this submission used no graded "
                f"attempt; {used} of {per_day} are used {day}.")
    left = per_day - used
    if left > 0:
        return note + f" {left} {'is' if left == 1 else 'are'} left."
    return note + f" None is left: your next graded attempt is possible from {next_midnight(submitted_at)}."


def next_midnight(moment: datetime.datetime) -> str:
    """The next UTC midnight after ``moment``, as the pages write times."""
    return _when(datetime.datetime.combine(moment.date() + datetime.timedelta(days=1), datetime.time()))


def deadline_note(due: datetime.datetime | None, extended_from: datetime.datetime | None,
                  closes: datetime.datetime | None, zone: str | None, submitted_at: datetime.datetime) -> str:
    """What a page says of the student's own deadline (naive UTC times, as policy.Policy holds
    them after for_student): the date in UTC and in the course's zone, the assignment's due date
    when the student has an extension, and whether this submission came after it. "" when the
    assignment has no due date."""
    if due is None:
        return ""
    note = f"Your deadline: {_in_zone(due, zone)}"
    if extended_from is not None:
        note += f" (your extension; the assignment's due date is {_in_zone(extended_from, zone)})"
    note += "."
    if submitted_at > due:
        note += f" This submission came {_late_by(submitted_at - due)} after it, so it counts as late"
        note += f"; late work is accepted until {_in_zone(closes, zone)}." if closes is not None else "."
    return note


def graded_page(assignment: str, submitted_at: datetime.datetime, result: dict, show_scores: bool,
                attempts: str = "", deadline: str = "") -> str:
    """The feedback of a graded notebook; ``result`` is route.grade_one's (scores present);
    ``attempts``: the line on the day's graded attempts (attempts_note); ``deadline``: the
    student's own (deadline_note)."""
    tasks = result["tasks"]
    full = [t for t, g in tasks.items() if g["score"] >= g["points"]]
    body = _head(assignment, submitted_at)
    summary = f"{len(full)} of {len(tasks)} tasks pass every hidden check."
    if show_scores:
        got, total = sum(g["score"] for g in tasks.values()), sum(g["points"] for g in tasks.values())
        summary += f" Points: {got:g} of {total:g}."
    body.append(f"<p class=\"note\">{escape(summary)} This is feedback before the deadline; your grade comes "
                f"from the final grading of your last submission.</p>")
    if deadline:
        body.append(f"<p class=\"note\">{escape(deadline)}</p>")
    if attempts:
        body.append(f"<p class=\"note\">{escape(attempts)}</p>")
    if version_note(result):  # an earlier release version (course_tools/release_versions.py)
        body.append(f"<p class=\"note\">{escape(version_note(result).strip())}</p>")
    for task_id, graded in tasks.items():
        checks = graded["checks"]
        ok = sum(1 for c in checks if c["passed"])
        passed = ok == len(checks)
        mark = "\N{CHECK MARK} passed" if passed else "\N{BALLOT X} failed"
        points = f" ({graded['score']:g} / {plural(graded['points'], 'point')})" if show_scores else ""
        body.append(f"<h2 class=\"{'pass' if passed else 'fail'}\">{escape(task_id)}: {mark}{escape(points)}</h2>")
        body.append(f"<p>{ok} of {len(checks)} hidden checks passed.</p>")
        if task_note(result, task_id):
            body.append(f"<p>{escape(task_note(result, task_id).strip())}</p>")
        if graded.get("out_of_time"):
            body.append("<p>This task ran out of its time budget: the checks after that point did not run.</p>")
        first = next((c for c in checks if not c["passed"]), None)
        if first is not None:
            case = f" ({first['case']})" if first.get("case") else ""
            body.append(f"<p>First failing check: {escape(first['check'] + case)}</p>")
            body.append(f"<pre>{escape(first['message'] or 'failed')}</pre>")
        diagnosis = graded.get("diagnosis")
        if diagnosis:
            body.append(f"<p><strong>This looks like a known mistake: {escape(diagnosis['title'])}.</strong> "
                        f"{escape(diagnosis['explanation'])} (See {escape(diagnosis['where'])}.)</p>")
    if result.get("cell_errors"):
        body.append("<h2>Cells that raised while your notebook ran</h2><ul>"
                    + "".join(f"<li><pre>{escape(str(e))}</pre></li>" for e in result["cell_errors"][:10]) + "</ul>")
    return _page(f"{assignment} feedback", body)


def receipt_page(assignment: str, submitted_at: datetime.datetime, why: str, deadline: str = "") -> str:
    """A submission that is kept but not graded now; ``why`` says why, in the student's terms;
    ``deadline``: the student's own (deadline_note)."""
    return _page(f"{assignment} feedback", _head(assignment, submitted_at) + [
        "<p class=\"note\">Your submission was received and is kept for the final grading after the deadline.</p>",
        f"<p>{escape(why)}</p>"] + ([f"<p class=\"note\">{escape(deadline)}</p>"] if deadline else []))


def mistake_page(assignment: str, submitted_at: datetime.datetime, why: str) -> str:
    """A submission the student must fix before it can be graded; ``why`` (service/mistakes.py) says what."""
    return _page(f"{assignment} feedback", _head(assignment, submitted_at) + [
        "<p class=\"note\">Your submission could not be graded, because of something in it that you can fix:</p>",
        f"<p>{escape(why)}</p>"])


def pending_page(assignment: str, submitted_at: datetime.datetime, ahead: int, seconds: float,
                 course_id: str | None = None) -> str:
    """The queue's page. With ``course_id`` it reloads itself and names the course and the
    assignment for the JupyterLab extension, which fetches the feedback again until it is graded."""
    where = "it is next" if ahead == 0 else f"{ahead} ahead of you"
    head = "" if course_id is None else (
        f"<meta http-equiv=\"refresh\" content=\"{PENDING_RELOAD_SECONDS}\">"
        f"<meta name=\"{PENDING_MARK}\" content=\"{escape(course_id)} {escape(assignment)}\">")
    then = ("Fetch the feedback again in a moment." if course_id is None else
            f"This page looks again every {PENDING_RELOAD_SECONDS} seconds: opened from the Assignments tab of the "
            f"course's JupyterLab, it turns into your feedback by itself when the grading ends. Elsewhere, fetch "
            f"the feedback again in a moment.")
    return _page(f"{assignment} feedback", _head(assignment, submitted_at) + [
        f"<p class=\"note\">Your submission is in the grading queue: {escape(where)}, about "
        f"{escape(_duration(seconds))}. {then}</p>"], head)


def refused_page(assignment: str, submitted_at: datetime.datetime, why: str) -> str:
    """A submission that is not graded, now or at the final grading, because of what it is."""
    return _page(f"{assignment} feedback", _head(assignment, submitted_at) + [
        "<p class=\"note\">Your submission was received but cannot be graded, now or in the final grading: "
        f"{escape(why)}.</p>",
        "<p>Submit the assignment's notebook as it was fetched and worked on (nbgrader's Submit button or "
        "<code>course submit</code>); your earlier submissions are kept.</p>"])


def timed_out_page(assignment: str, submitted_at: datetime.datetime, limit: int) -> str:
    """A submission whose grading was stopped at its time limit (the attempt counts)."""
    return _page(f"{assignment} feedback", _head(assignment, submitted_at) + [
        f"<p class=\"note\">Your notebook's grading ran for more than {limit} s, its time limit, and was "
        f"stopped: it is not graded now, and this counts as one of today's graded attempts.</p>",
        "<p>Look for code that sleeps, waits for input or loops without end, in a cell or in a function the "
        "checks call. The same notebook is not graded again before the deadline; the final grading grades "
        "your last submission.</p>"])


def error_page(assignment: str, submitted_at: datetime.datetime) -> str:
    return _page(f"{assignment} feedback", _head(assignment, submitted_at) + [
        f"<p class=\"note\">Your submission is {NOT_GRADED_YET}. It is kept, and the final grading after the "
        f"deadline grades it; you lose nothing by this.</p>"])


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    return f"{seconds} s" if seconds < 120 else f"{round(seconds / 60)} min"
