"""Your own deadlines, as the course's grading service knows them, and what `course fetch` /
`course submit` say of them.

On the course's hub every student server has COURSE_GRADING_URL (the grading service's
address, hub/jupyterhub_config.py) and JUPYTERHUB_API_TOKEN (the server's own hub token). ``ask``
sends that token to the service's ``deadlines`` page, which answers for the token's owner only
(course_tools/service/deadline_api.py): nothing here can name another student, and this process
never reads the gradebook. Without COURSE_GRADING_URL (a self-paced copy, a machine of one's own)
there is nothing to ask and nothing is said; a service that does not answer is named, and never
stops a fetch or a submission.
"""
from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass, field

from .times import duration, in_zone

GRADING_URL = "COURSE_GRADING_URL"
TOKEN = "JUPYTERHUB_API_TOKEN"
PAGE = "deadlines"
ASK_SECONDS = 5.0                       # a fetch or a submission waits at most this long for it
LAST_HOUR = datetime.timedelta(hours=1)  # a deadline this close gets a warning


@dataclass(frozen=True)
class Deadline:
    due: datetime.datetime | None              # the student's own deadline, naive UTC; None: no deadline
    extended: bool                             # an extension is in force (due is its deadline)
    assignment_due: datetime.datetime | None   # the assignment's own due date
    late_until: datetime.datetime | None       # late work earns points until then; None: no end


@dataclass(frozen=True)
class OwnDeadlines:
    known: bool
    why: str = ""                    # not known: why ("" when there is no service to ask here)
    zone: str | None = None          # the course's time zone (c.Course.timezone)
    course_id: str | None = None     # the course whose grading service answered
    assignments: dict[str, Deadline] = field(default_factory=dict)


def _when(text: str | None) -> datetime.datetime | None:
    if text is None:
        return None
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def parse(answer: dict) -> OwnDeadlines:
    """The service's JSON answer (deadline_api.py's shape) as OwnDeadlines; ValueError, KeyError or
    TypeError when it has another shape."""
    return OwnDeadlines(known=True, zone=answer["zone"], course_id=answer["course_id"], assignments={
        name: Deadline(_when(d["due"]), bool(d["extended"]), _when(d["assignment_due"]), _when(d["late_until"]))
        for name, d in answer["assignments"].items()})


def ask(environ=None, timeout: float = ASK_SECONDS) -> OwnDeadlines:
    """The grading service's answer for this server's own token; never raises."""
    import urllib.error
    import urllib.request

    environ = os.environ if environ is None else environ
    base = environ.get(GRADING_URL, "")
    if not base:
        return OwnDeadlines(known=False)
    if not base.startswith(("http://", "https://")):
        return OwnDeadlines(known=False, why=f"{GRADING_URL}={base!r} is not an http(s) address")
    token = environ.get(TOKEN, "")
    if not token:
        return OwnDeadlines(known=False, why=f"{TOKEN} is not set, so the grading service cannot tell who you are")
    request = urllib.request.Request(base.rstrip("/") + "/" + PAGE, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return parse(json.loads(response.read(1_000_000)))
    except urllib.error.HTTPError as err:
        return OwnDeadlines(known=False, why=f"the grading service refused ({err.code}: {_error_of(err)})")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        return OwnDeadlines(known=False, why=f"the grading service did not answer ({err})")


def _error_of(err) -> str:
    try:
        return str(json.loads(err.read(10_000))["error"])
    except Exception:  # noqa: BLE001 - any body that is not the service's JSON: its reason is enough
        return str(err.reason)


def lines_for(own: OwnDeadlines, assignment: str, now: datetime.datetime, submitting: bool) -> tuple[list[str], list[str]]:
    """What to print about ``assignment``'s deadline at ``now`` (naive UTC): (lines, warnings).
    ``submitting``: a submission was just made (lateness is the submission's), else a fetch."""
    if not own.known:
        return ([f"Your deadline is not known here: {own.why}."] if own.why else []), []
    mine = own.assignments.get(assignment)
    if mine is None:
        return [f"Your deadline for {assignment} is not known: the grading service does not list it as released."], []
    if mine.due is None:
        return [f"{assignment} has no deadline."], []
    line = f"Your deadline for {assignment}: {in_zone(mine.due, own.zone)}"
    if mine.extended:
        line += (f", extended (the assignment's due date is {in_zone(mine.assignment_due, own.zone)})"
                 if mine.assignment_due is not None else ", extended")
    warnings = []
    if now > mine.due:
        late = duration(now - mine.due)
        warning = (f"this submission came {late} after your deadline, so it counts as late" if submitting
                   else f"your deadline passed {late} ago; what you submit now counts as late")
        if mine.late_until is None:
            warning += "."
        elif now <= mine.late_until:
            warning += f"; late work earns points until {in_zone(mine.late_until, own.zone)}."
        else:
            warning += f"; late work no longer earns points (it did until {in_zone(mine.late_until, own.zone)})."
        warnings.append(warning)
    elif mine.due - now <= LAST_HOUR:
        warnings.append(f"your deadline is in {duration(mine.due - now)}"
                        + (": a submission after it counts as late." if submitting else ": submit before then."))
    return [line + "."], warnings
