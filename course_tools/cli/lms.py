"""`course lms push | roster | keys | config`: the course in its LMS through LTI 1.3 Advantage
(course_tools/lms does the work). Parsing and printing only."""
from __future__ import annotations

from course_student.words import plural

from ..course_dir import Course, CourseError
from ..table import format_table
from ..terminal import printable

ACTIONS = ("push", "roster", "keys", "config")


def _say(text: str = "") -> None:
    print(printable(text), flush=True)


def add_commands(command) -> None:
    sub = command("lms", "the course's LMS through LTI 1.3: push grades, sync the roster, make the tool's key, "
                         "print the registration values",
                  description="push ID: post each student's final score of an assignment to the LMS (AGS; "
                              "only what changed since the last push). roster: the LMS's members into the "
                              "gradebook (NRPS). keys: make the tool's private key. config: what the LMS "
                              "administrator enters. The platform's registration is c.LMS in nbgrader_config.py "
                              "(docs/lms.md).")
    sub.add_argument("action", choices=ACTIONS, help="push | roster | keys | config")
    sub.add_argument("assignment", nargs="?", default=None, help="the assignment id (push)")
    sub.add_argument("--dry-run", action="store_true", help="push, roster: say what would change, change nothing")
    sub.add_argument("--replace", action="store_true",
                     help="keys: replace an existing key (the LMS must then get the new public key)")


def run(course: Course, args) -> int:
    if args.action != "push" and args.assignment:
        raise CourseError(f"course lms {args.action} takes no assignment id")
    if args.action == "push":
        if not args.assignment:
            raise CourseError("give the assignment id: course lms push ID")
        return push(course, args.assignment, args.dry_run)
    if args.action == "roster":
        return roster(course, args.dry_run)
    if args.action == "keys":
        return keys(course, args.replace)
    return config(course)


def push(course: Course, assignment: str, dry_run: bool) -> int:
    from course_student.errors import check_assignment

    from ..lms.push import push as push_scores

    check_assignment(assignment)
    outcome = push_scores(course, assignment, dry_run)
    for student, why in outcome.skipped:
        _say(f"  not sent: {student}: {why}")
    if dry_run or not outcome.planned and not outcome.confirmed:
        if outcome.planned:
            rows = [[p.score.student, p.why, _was(p.previous), f"{p.score.score:g} / {p.score.maximum:g}",
                     p.score.payload()["gradingProgress"]] for p in outcome.planned]
            _say(format_table(["student", "why", "LMS had", "would send", "progress"], rows))
        _say(f"{assignment}: {plural(len(outcome.planned), 'score')} to send, {outcome.up_to_date} up to date"
             + (" (dry run: nothing sent)" if dry_run else ""))
        return 0
    for student, why in outcome.refused:
        _say(f"  refused by the LMS: {student}: {why}")
    for note in outcome.notes:
        _say(f"  note: {note}")
    _say(f"{assignment}: {plural(len(outcome.sent), 'score')} sent, "
         f"{len(outcome.confirmed)} found already on the LMS, {outcome.up_to_date} up to date, "
         f"{len(outcome.refused)} refused, {len(outcome.unanswered)} unanswered ({plural(outcome.requests, 'request')})")
    if not outcome.complete:
        _say(f"{outcome.stopped + ': ' if outcome.stopped else ''}run `course lms push {assignment}` again: it "
             f"checks the unanswered ones on the LMS and sends only what is missing")
        return 1
    return 1 if outcome.refused else 0


def _was(previous: dict | None) -> str:
    if previous is None:
        return "-"
    import json

    sent = json.loads(previous["payload"])
    return f"{sent['scoreGiven']:g} / {sent['scoreMaximum']:g}" + (" (unconfirmed)" if previous["state"] == "sending"
                                                                    else "")


def roster(course: Course, dry_run: bool) -> int:
    from ..lms.roster import sync

    outcome = sync(course, dry_run)
    for uid, name, why in outcome.mapped:
        _say(f"  mapped: platform id {uid!r} is {why}: its account and student id is {name}")
    for uid, why in outcome.refused:
        _say(f"  refused: platform id {uid!r}: {why}")
    verb = "would change" if dry_run else "changed"
    _say(f"roster: {plural(len(outcome.added), 'member')} added, {len(outcome.updated)} updated, "
         f"{len(outcome.dropped)} dropped (inactive, grades kept), {outcome.unchanged} unchanged; "
         f"{plural(len(outcome.staff), 'instructor or TA', 'instructors or TAs')} (not students) "
         f"[{verb}; {plural(outcome.requests, 'request')}]")
    for name in outcome.dropped:
        _say(f"  dropped: {name} (inactive: not sent grades; the gradebook keeps the student and the grades)")
    return 1 if outcome.refused else 0


def keys(course: Course, replace: bool) -> int:
    from ..lms import keys as lms_keys
    from ..lms.registration import default_key_file, settings

    chosen = settings(course).private_key_file
    from pathlib import Path

    path = Path(chosen).expanduser() if chosen else default_key_file(course)
    jwk = lms_keys.generate(path, course.exchange, replace)
    _say(f"private key written to {path} (mode 0600: only you can read it)")
    _say(f"its public key (JWK), for the LMS:\n{jwk}")
    _say("next: course lms config prints every value the LMS administrator enters")
    return 0


def config(course: Course) -> int:
    from ..lms import keys as lms_keys
    from ..lms.registration import registration, settings

    from ..lms.launch_urls import launch_urls

    lms = settings(course)
    urls = launch_urls(lms.tool_url.rstrip("/") or "https://<your hub>")
    _say("Enter in the LMS (Canvas: Admin > Developer Keys > + LTI Key; Moodle: Site administration > Plugins > "
         "Activity modules > External tool > Manage tools > configure a tool manually):")
    table = [["tool name", f"{course.course_id or 'course'} (course hub)"],
             ["login initiation URL (OpenID Connect)", urls["login"]],
             ["redirect URI (the launch's form post)", urls["redirect"]],
             ["target link URI (tool URL)", urls["target"]],
             ["public keyset URL (JWKS: Canvas's 'Public JWK URL', Moodle's 'Keyset URL')", urls["jwks"]],
             ["custom parameter of an assignment's link", "assignment=<assignment id> (or the target link URI "
                                                          "with ?assignment=<assignment id>)"],
             ["services", "AGS: line items, scores, results; NRPS: memberships"],
             ["privacy", "send the user's name and e-mail (names go into the gradebook)"]]
    _say(format_table(["setting", "value"], table))
    try:
        reg = registration(course)
        pem = lms_keys.load(reg.key_file, course.exchange)
    except CourseError as err:
        _say(f"\nthe tool's public key: not available yet ({err})")
    else:
        _say(f"\npublic key (JWK: paste where the LMS asks for the tool's public JWK or key set):\n"
             f"{{\"keys\": [{lms_keys.public_jwk(pem)}]}}\n\npublic key (PEM, Moodle's 'Public key'):\n"
             f"{lms_keys.public_pem(pem).strip()}")
    _say("\nThe LMS then shows these; set them in nbgrader_config.py:")
    rows = [[f"c.LMS.{name}", getattr(lms, name) or "(not set)"]
            for name in ("issuer", "client_id", "deployment_id", "auth_login_url", "token_url", "jwks_url",
                         "lineitems_url", "memberships_url", "private_key_file", "tool_url")]
    _say(format_table(["setting", "now"], rows))
    return 0
