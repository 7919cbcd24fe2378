"""`course lms roster`: the course's members from the platform (NRPS) into the gradebook.

- Every page of the membership container is read (``Link: rel="next"``; connector.py keeps the
  URL's case).
- Learners become gradebook students, with their first and last names and e-mail where the
  platform gives them; instructors, teaching assistants, designers and administrators are recorded
  in the ledger as members but are not students.
- A platform id becomes the student id through accounts.account_name: kept where it is a safe
  account name, mapped otherwise (the report says which and why). Two platform ids that would
  get the same account name are refused, never merged.
- A member the platform marks Inactive or Deleted, or no longer lists, is marked inactive in the
  ledger; the gradebook keeps the student with every submission and grade (nbgrader's students
  have no "active" field, and deleting one deletes their grades).
- A re-run writes only what changed, and says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..course_dir import Course
from .accounts import account_name, why_mapped
from .ledger import Ledger
from .registration import LmsError, registration

STAFF_ROLES = ("TeacherRole", "TeachingAssistantRole", "DesignerRole", "StaffRole")
GRADER_ROLES = ("TeacherRole", "TeachingAssistantRole")
COMPARED = ("student", "is_student", "active", "roles", "given_name", "family_name", "email")


@dataclass
class RosterOutcome:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    unchanged: int = 0
    staff: list[str] = field(default_factory=list)
    mapped: list[tuple[str, str, str]] = field(default_factory=list)    # (platform id, account name, why)
    refused: list[tuple[str, str]] = field(default_factory=list)        # (platform id, why)
    requests: int = 0


def is_learner(roles: list[str]) -> bool:
    """A learner of the course and nothing that grades or administers it (PyLTI1p3's role vocabulary)."""
    from pylti1p3 import roles as lti_roles

    claim = {"https://purl.imsglobal.org/spec/lti/claim/roles": roles}
    if any(getattr(lti_roles, name)(claim).check() for name in STAFF_ROLES):
        return False
    return lti_roles.StudentRole(claim).check()


def is_grader(roles: list[str]) -> bool:
    """An instructor or teaching assistant of the course (PyLTI1p3's role vocabulary): the hub's
    launch puts them in the graders' group; the roster records them as members, never students."""
    from pylti1p3 import roles as lti_roles

    claim = {"https://purl.imsglobal.org/spec/lti/claim/roles": roles}
    return any(getattr(lti_roles, name)(claim).check() for name in GRADER_ROLES)


def _text(member: dict, key: str) -> str:
    value = member.get(key)
    return value.strip() if isinstance(value, str) else ""


def fetch_members(course: Course) -> tuple[list[dict], int]:
    """Every member the platform lists (all pages), and the number of requests it took."""
    from pylti1p3.names_roles import NamesRolesProvisioningService

    from . import keys
    from .connector import connect

    reg = registration(course, needs=("memberships_url",))
    connector = connect(reg, keys.load(reg.key_file, course.exchange))
    service = NamesRolesProvisioningService(connector, {"context_memberships_url": reg.memberships_url})
    members = service.get_members()
    if not isinstance(members, list):
        raise LmsError(f"{reg.memberships_url}: the platform's members are not a list")
    return members, connector.session.count


def sync(course: Course, dry_run: bool = False) -> RosterOutcome:
    issuer = registration(course, needs=("memberships_url",)).issuer
    listed, requests = fetch_members(course)
    outcome = RosterOutcome(requests=requests)
    with Ledger(course.db_url) as ledger:
        known = ledger.members()
        owner = {row["student"]: uid for uid, row in known.items()}
        rows, seen = [], set()
        for member in listed:
            uid = member.get("user_id") if isinstance(member, dict) else None
            if not isinstance(uid, str) or not uid.strip():
                outcome.refused.append((repr(uid)[:60], "no user_id"))
                continue
            if uid in seen:
                outcome.refused.append((uid, "listed twice"))
                continue
            seen.add(uid)
            name, mapped = account_name(issuer, uid)
            if owner.get(name, uid) != uid:
                outcome.refused.append((uid, f"its account name {name} is another member's ({owner[name]})"))
                continue
            owner[name] = uid
            if mapped:
                outcome.mapped.append((uid, name, why_mapped(uid)))
            roles = [r for r in member.get("roles") or [] if isinstance(r, str)]
            rows.append(dict(user_id=uid, student=name, is_student=is_learner(roles),
                             active=member.get("status", "Active") == "Active", roles=" ".join(roles),
                             given_name=_text(member, "given_name") or _text(member, "name"),
                             family_name=_text(member, "family_name"), email=_text(member, "email")))
        for uid, row in known.items():   # no longer listed: dropped
            if uid not in seen and row["active"]:
                rows.append({**{k: row[k] for k in ("user_id", *COMPARED)}, "active": False})
        _apply(course, ledger, rows, known, outcome, dry_run)
    return outcome


def _apply(course: Course, ledger: Ledger, rows: list[dict], known: dict, outcome: RosterOutcome,
           dry_run: bool) -> None:
    """Write what changed: the gradebook's students (one commit: nbgrader's ORM, as its own
    update_or_create_student writes them), then the ledger's members (one transaction)."""
    from nbgrader.api import Student

    changed_rows = []
    with course.gradebook(must_exist=False) as gradebook:
        students = {s.id: s for s in gradebook.students}
        for row in rows:
            before = known.get(row["user_id"])
            if not row["is_student"]:
                outcome.staff.append(row["student"])
            changed = before is None or any(before[k] != row[k] for k in COMPARED)
            in_book = students.get(row["student"])
            names = dict(first_name=row["given_name"] or None, last_name=row["family_name"] or None,
                         email=row["email"] or None)
            book_differs = row["is_student"] and row["active"] and (
                in_book is None or any(getattr(in_book, k) != v for k, v in names.items()))
            if not changed and not book_differs:
                outcome.unchanged += 1
                continue
            if before is not None and before["active"] and not row["active"]:
                outcome.dropped.append(row["student"])
            elif before is None or in_book is None and row["is_student"]:
                outcome.added.append(row["student"])
            else:
                outcome.updated.append(row["student"])
            changed_rows.append(row)
            if book_differs and not dry_run:   # never deleted, never renamed away: a drop only marks the ledger
                if in_book is None:
                    gradebook.db.add(Student(id=row["student"], **names))
                else:
                    for key, value in names.items():
                        setattr(in_book, key, value)
        if not dry_run:
            gradebook.db.commit()
    if changed_rows and not dry_run:
        ledger.put_members(changed_rows)
