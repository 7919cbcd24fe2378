"""`course lms push ID`: each student's final score of an assignment to the platform (AGS), sent once.

1. **Plan, offline.** The final scores (scores.py: what `course export` writes) against the ledger
   (ledger.py): a student whose score, maximum, progress and comment were sent and accepted is up to
   date; the rest are sent (a score the LMS refused is tried again: it holds nothing of it). Nothing
   to send: no request at all.
2. **The line item** of the assignment (lineitem.py: the one recorded, else the platform's for the
   assignment, else a new one).
3. **Unconfirmed posts first.** A row left "sending" (the platform answered 500, did not answer in time,
   or the push was killed) may or may not have reached the platform: its results are read, and a
   student whose result already holds the score is recorded as sent, not posted again.
4. **Post.** The scores to post are recorded "sending" (committed) before the first POST, and each
   "sent" or "refused" with its answer after it, so that a stop anywhere loses nothing and the next
   push duplicates nothing.
"""
from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field

from ..course_dir import Course
from .connector import AGS_SCOPES, LmsError, Refused, Unanswered
from .ledger import Ledger
from .lineitem import find_lineitem, score_service
from .registration import registration
from .scores import FinalScore, final_scores

GIVE_UP_AFTER = 3   # consecutive requests without an answer: the platform is down, stop


@dataclass
class Planned:
    score: FinalScore
    user_id: str
    previous: dict | None
    why: str   # new | changed | unconfirmed | new line item


@dataclass
class Outcome:
    assignment: str
    planned: list[Planned] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)   # (student, why)
    up_to_date: int = 0
    sent: list[str] = field(default_factory=list)
    confirmed: list[str] = field(default_factory=list)            # found on the platform, not posted again
    refused: list[tuple[str, str]] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    requests: int = 0
    stopped: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.unanswered and not self.stopped


def plan(course: Course, assignment: str, ledger: Ledger, lineitem: str | None = None,
         finals: list[FinalScore] | None = None) -> Outcome:
    """What a push would send (no network); ``finals``: the final scores, when already read."""
    finals = final_scores(course, assignment) if finals is None else finals
    by_student = {m["student"]: m for m in ledger.members().values()}
    sent = ledger.scores(assignment)
    if lineitem is None:
        recorded = ledger.lineitem(assignment)
        lineitem = recorded["lineitem"] if recorded else None
    outcome = Outcome(assignment)
    for final in finals:
        member = by_student.get(final.student)
        if member is None:
            outcome.skipped.append((final.student, "not in the LMS's roster (course lms roster)"))
            continue
        if not member["is_student"]:
            outcome.skipped.append((final.student, "not a learner in the LMS"))
            continue
        if not member["active"]:
            outcome.skipped.append((final.student, "dropped: inactive in the LMS"))
            continue
        previous = sent.get(final.student)
        same = (previous is not None and previous["payload"] == final.payload_text()
                and previous["user_id"] == member["user_id"])
        if same and previous["lineitem"] == lineitem and previous["state"] == "sent":
            outcome.up_to_date += 1
            continue
        why = ("new" if previous is None else "unconfirmed" if same and previous["state"] == "sending"
               else "refused last time" if same and previous["state"] == "refused"
               else "new line item" if same else "changed")
        outcome.planned.append(Planned(final, member["user_id"], previous, why))
    return outcome


def push(course: Course, assignment: str, dry_run: bool = False) -> Outcome:
    reg = registration(course, needs=("lineitems_url",))
    finals = final_scores(course, assignment)
    with Ledger(course.db_url) as ledger:
        outcome = plan(course, assignment, ledger, finals=finals)
        if dry_run or not outcome.planned:
            return outcome
        from . import keys
        from .connector import connect

        connector = connect(reg, keys.load(reg.key_file, course.exchange))
        # The grading service's progress post (c.LMS.post_progress) holds the lock for one post at most.
        with ledger.pushing(assignment, wait=reg.timeout + 5):
            return _send(course, assignment, ledger, reg, connector, finals)


def _send(course: Course, assignment: str, ledger: Ledger, reg, connector, finals: list[FinalScore]) -> Outcome:
    """Steps 2 to 4, under the push lock, planned again there (another push may have sent some)."""
    outcome = plan(course, assignment, ledger, finals=finals)
    try:
        if outcome.planned:
            lineitem, notes = find_lineitem(connector, ledger, reg, assignment, outcome.planned[0].score.maximum)
            outcome = plan(course, assignment, ledger, lineitem, finals)   # the line item may be another one
            outcome.notes += notes
            _confirm(connector, ledger, outcome, lineitem)
            _post(connector, ledger, outcome, lineitem)
    finally:
        outcome.requests = connector.session.count
    return outcome


# ---------------------------------------------------------------------------------- unconfirmed posts
def _results(connector, lineitem: str) -> dict[str, dict]:
    """The platform's results of the line item, by user id (every page: PyLTI1p3's get_grades reads one)."""
    from pylti1p3.assignments_grades import AssignmentsGradesService

    url, found = AssignmentsGradesService._add_url_path_ending(lineitem, "results"), {}
    while url:
        page = connector.make_service_request(AGS_SCOPES, url, accept="application/vnd.ims.lis.v2.resultcontainer+json")
        if not isinstance(page["body"], list):
            raise LmsError(f"{url}: the platform's results are not a list")
        found.update({str(r.get("userId")): r for r in page["body"] if isinstance(r, dict)})
        url = page["next_page_url"]
    return found


def holds(result: dict | None, payload: dict) -> bool:
    """Whether a platform's result holds the score of ``payload`` (scaled to its own maximum, as AGS allows)."""
    if not result:
        return False
    score, maximum = result.get("resultScore"), result.get("resultMaximum", 1)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (score, maximum)) or maximum <= 0:
        return False
    return abs(score / maximum - payload["scoreGiven"] / payload["scoreMaximum"]) < 1e-6 and \
        (result.get("comment") in (None, payload["comment"]))


def _confirm(connector, ledger: Ledger, outcome: Outcome, lineitem: str) -> None:
    uncertain = [p for p in outcome.planned if p.why == "unconfirmed"]
    if not uncertain:
        return
    try:
        results = _results(connector, lineitem)
    except Refused as err:
        if err.status not in (401, 403):
            raise
        outcome.notes.append("the LMS does not let this tool read results (scope result.readonly): the "
                             f"{len(uncertain)} unconfirmed scores are sent again (an LMS keeps the latest)")
        return
    for planned in uncertain:
        if holds(results.get(planned.user_id), planned.score.payload()):
            ledger.put_score(planned.score.assignment, planned.score.student, state="sent",
                             answer="confirmed from the platform's results")
            outcome.confirmed.append(planned.score.student)
    outcome.planned = [p for p in outcome.planned if p.score.student not in outcome.confirmed]


# ---------------------------------------------------------------------------------- posting
def _timestamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


def _post(connector, ledger: Ledger, outcome: Outcome, lineitem: str) -> None:
    from pylti1p3.grade import Grade
    from pylti1p3.lineitem import LineItem

    service = score_service(connector, connector.reg)
    silent = 0
    stamps = {p.score.student: _timestamp() for p in outcome.planned}
    # Every score about to be posted is "sending" before the first post (one transaction): a stop
    # anywhere after this leaves each either answered or checked on the platform by the next push.
    ledger.put_scores(outcome.assignment, {p.score.student: dict(
        user_id=p.user_id, lineitem=lineitem, payload=p.score.payload_text(), timestamp=stamps[p.score.student],
        state="sending", answer_status=None, answer="") for p in outcome.planned})
    for planned in outcome.planned:
        final, payload, stamp = planned.score, planned.score.payload(), stamps[planned.score.student]
        grade = (Grade().set_score_given(payload["scoreGiven"]).set_score_maximum(payload["scoreMaximum"])
                 .set_activity_progress(payload["activityProgress"]).set_grading_progress(payload["gradingProgress"])
                 .set_timestamp(stamp).set_user_id(planned.user_id).set_comment(payload["comment"]))
        try:
            answer = service.put_grade(grade, LineItem({"id": lineitem}))
        except Unanswered:
            outcome.unanswered.append(final.student)
            silent += 1
            if silent >= GIVE_UP_AFTER:
                outcome.stopped = f"the platform stopped answering ({silent} requests in a row)"
                return
            continue
        except Refused as err:
            silent = 0
            if err.status in (401, 429) or err.status >= 500:   # not about this score: try it again next time
                outcome.unanswered.append(final.student)
                continue
            ledger.put_score(final.assignment, final.student, state="refused", answer_status=err.status,
                             answer=str(err)[:500])
            outcome.refused.append((final.student, str(err)))
            continue
        silent = 0
        body = answer.get("body")
        echoed = isinstance(body, dict) and "resultScore" in body and not holds(body, payload)
        ledger.put_score(final.assignment, final.student, state="sending" if echoed else "sent",
                         answer_status=connector.session.last_status,
                         answer=json.dumps(body)[:500] if body is not None else "")
        if echoed:   # the platform says it holds another score: checked against its results next time
            outcome.unanswered.append(final.student)
        else:
            outcome.sent.append(final.student)
