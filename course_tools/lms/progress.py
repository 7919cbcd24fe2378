"""The grading service's progress posts (``c.LMS.post_progress``, off by default): what the LMS's
gradebook shows of a submission before its final score exists.

What is posted, per assignment and student, to the assignment's line item (lineitem.py):

    activityProgress "Submitted", gradingProgress "Pending"        a submission arrived (or was graded
                                                                  by the service, with no written answer)
    activityProgress "Submitted", gradingProgress "PendingManual"  graded by the service; written
                                                                  answers wait for a grader

Never ``scoreGiven`` (the LMS's gradebook gets no provisional score: the service's score is
feedback before the deadline, not the grade) and never "FullyGraded": without a score it would
tell the LMS that the final grade is empty. The final score, with "FullyGraded" or
"PendingManual", is `course lms push`'s alone (push.py: after late penalty, extensions and manual
grading). AGS says a score without ``scoreGiven`` clears the score the LMS holds, so:

- **never after the push**: a student the push has recorded for an assignment (course_lms_scores,
  in any state) gets no progress post of it again. Each post is decided and made under the
  assignment's lock (ledger.pushing), which every push holds while it posts, so the two never
  interleave; a push that starts meanwhile waits for that one post, and its scores carry later
  timestamps (an LMS keeps the latest).
- **the student is the queue's**: the owner of the submission folder as inbound.py verified it,
  mapped to the LMS's user id by the roster (course_lms_members). Nothing of the notebook is read.
  A student the roster does not list as an active learner gets nothing.
- **recorded, never posted twice**: each post is recorded "sending" in course_lms_progress
  (committed) just before its request, then "sent" or "refused" with the LMS's answer. A post is
  made only where the record differs (a new stage) or its answer never came: an LMS that answered
  500 (or 401, 429) or could not be reached is tried again at a later round; so is a post left
  "sending" by a service killed during its request, whose fate is unknown (progress cannot be read
  back from the LMS: its results hold scores only), the one case where the LMS may get the same
  progress twice. A refusal (say 400) is kept and not retried until the progress changes.
- **a round stops at the first post without an answer** (the LMS is down or failing): the
  caller (service/progress.py, a thread of `course serve`) tries again later. Grading never waits.
"""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field

from ..course_dir import Course
from .connector import Refused, Unanswered
from .ledger import Ledger
from .ledger import progress as progress_table
from .lineitem import find_lineitem, score_service
from .registration import LmsError, registration
from .scores import assignment_maximum

PENDING, PENDING_MANUAL = "Pending", "PendingManual"


@dataclass(frozen=True)
class Progress:
    """One student's progress in one assignment; ``student``: the queue's, never the notebook's."""
    assignment: str
    student: str
    grading: str   # PENDING | PENDING_MANUAL

    def payload(self) -> dict:
        return {"activityProgress": "Submitted", "gradingProgress": self.grading}

    def payload_text(self) -> str:
        return json.dumps(self.payload(), sort_keys=True)


@dataclass
class Round:
    planned: list[tuple[Progress, str]] = field(default_factory=list)   # (progress, the LMS's user id)
    up_to_date: int = 0
    final: list[str] = field(default_factory=list)      # "assignment student": the push's now
    skipped: list[tuple[str, str]] = field(default_factory=list)        # (student, why)
    sent: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)    # "assignment student" still due: the next round's
    requests: int = 0
    stopped: str = ""


def _due(previous: dict | None, item: Progress, lineitem: str | None) -> bool:
    """Whether ``item`` must be posted, given what was recorded for its student and the assignment's
    line item now (a new one, after the LMS's was deleted, has none of it)."""
    if previous is None or previous["payload"] != item.payload_text() or previous["lineitem"] != lineitem:
        return True
    return previous["state"] == "sending"   # its answer never came


def plan(ledger: Ledger, wanted: list[Progress]) -> Round:
    """What a round would post (no request)."""
    members = {m["student"]: m for m in ledger.members().values()}
    pushed, posted, lineitems = {}, {}, {}
    outcome = Round()
    for item in wanted:
        if item.assignment not in pushed:
            pushed[item.assignment] = ledger.scores(item.assignment)
            posted[item.assignment] = ledger.progress(item.assignment)
            lineitems[item.assignment] = (ledger.lineitem(item.assignment) or {}).get("lineitem")
        member = members.get(item.student)
        if member is None or not member["is_student"] or not member["active"]:
            outcome.skipped.append((item.student, "not an active learner in the LMS's roster"))
        elif item.student in pushed[item.assignment]:
            outcome.final.append(f"{item.assignment} {item.student}")
        elif _due(posted[item.assignment].get(item.student), item, lineitems[item.assignment]):
            outcome.planned.append((item, member["user_id"]))
        else:
            outcome.up_to_date += 1
    return outcome


def post(course: Course, wanted: list[Progress]) -> Round:
    """Post what ``wanted`` says and the ledger does not hold yet; no request when nothing is due.
    LmsError when the registration or the key is wrong (nothing is posted then)."""
    reg = registration(course, needs=("lineitems_url",))
    with Ledger(course.db_url) as ledger:
        outcome = plan(ledger, wanted)
        if not outcome.planned:
            return outcome
        from . import keys
        from .connector import connect

        connector = connect(reg, keys.load(reg.key_file, course.exchange))
        try:
            for assignment in dict.fromkeys(item.assignment for item, _ in outcome.planned):
                mine = [(item, user) for item, user in outcome.planned if item.assignment == assignment]
                if not _post_assignment(course, ledger, reg, connector, assignment, mine, outcome):
                    break
        finally:
            outcome.requests = connector.session.count
        # What is still due after the round (a failure, a push holding an assignment): the next round's.
        outcome.waiting = [f"{item.assignment} {item.student}"
                           for item, _ in plan(ledger, [item for item, _ in outcome.planned]).planned]
    return outcome


def _post_assignment(course: Course, ledger: Ledger, reg, connector, assignment: str,
                     planned: list[tuple[Progress, str]], outcome: Round) -> bool:
    """Post ``planned`` (one assignment's); False when the round must stop (the LMS failed, or a
    push holds the assignment)."""
    from pylti1p3.grade import Grade
    from pylti1p3.lineitem import LineItem

    try:
        maximum = assignment_maximum(course, assignment)
        with ledger.pushing(assignment, for_progress=True):
            lineitem, _ = find_lineitem(connector, ledger, reg, assignment, maximum)
    except (Unanswered, Refused, LmsError) as err:
        outcome.stopped = f"{assignment}: {err}"
        return False
    service = score_service(connector, reg)
    for item, user_id in planned:
        try:
            with ledger.pushing(assignment, for_progress=True):
                if ledger.scores(assignment).get(item.student) is not None:   # a push recorded it meanwhile
                    outcome.final.append(f"{assignment} {item.student}")
                    continue
                if not _due(ledger.progress(assignment).get(item.student), item, lineitem):   # another service posted it
                    continue
                stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
                ledger.put_score(assignment, item.student, progress_table, user_id=user_id, lineitem=lineitem,
                                 payload=item.payload_text(), timestamp=stamp, state="sending",
                                 answer_status=None, answer="")
                grade = (Grade().set_activity_progress("Submitted").set_grading_progress(item.grading)
                         .set_timestamp(stamp).set_user_id(user_id))
                try:
                    answer = service.put_grade(grade, LineItem({"id": lineitem}))
                except Refused as err:
                    if err.status in (401, 429) or err.status >= 500:
                        raise
                    ledger.put_score(assignment, item.student, progress_table, state="refused",
                                     answer_status=err.status, answer=str(err)[:500])
                    outcome.refused.append((item.student, str(err)))
                    continue
                body = answer.get("body")
                ledger.put_score(assignment, item.student, progress_table, state="sent",
                                 answer_status=connector.session.last_status,
                                 answer=json.dumps(body)[:500] if body is not None else "")
                outcome.sent.append(item.student)
        except (Unanswered, Refused, LmsError) as err:   # the LMS failing, or a push holding the lock
            outcome.stopped = f"{assignment}: {err}"
            return False
    return True
