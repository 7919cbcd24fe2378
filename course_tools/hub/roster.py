"""The roster of a hub: who is an instructor, a teaching assistant or a student.

hub/roster.csv has a header ``username,role`` (optionally followed by ``first_name,last_name``,
then optionally ``section``) and one person a line; lines starting with '#' are comments. A
student's section (a lab group, a tutorial) lets `course extend --section NAME` reach them all. The names go into the gradebook
(`course init --roster`, the hub's course folder), so that graders see whom they grade. Instructors and TAs are graders: they join the JupyterHub group
``formgrade-<course id>`` that reaches the course's grader service.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ..paths import HUB

ROLES = ("instructor", "ta", "student")
# What useradd accepts on Debian (and JupyterHub keeps as is): lower case, digits, '-', '_'.
NAME = re.compile(r"[a-z_][a-z0-9_-]{0,30}")
DEFAULT = HUB / "roster.csv"
HEADERS = (["username", "role"], ["username", "role", "first_name", "last_name"],
           ["username", "role", "section"], ["username", "role", "first_name", "last_name", "section"])
SECTION = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}")


class RosterError(ValueError):
    """The roster file cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class Person:
    username: str
    role: str
    first_name: str = ""
    last_name: str = ""
    section: str = ""

    @property
    def grades(self) -> bool:
        return self.role in ("instructor", "ta")


@dataclass(frozen=True)
class Roster:
    people: tuple[Person, ...]

    def names(self, *roles: str) -> list[str]:
        return [p.username for p in self.people if not roles or p.role in roles]

    @property
    def graders(self) -> list[str]:
        return [p.username for p in self.people if p.grades]

    @property
    def students(self) -> list[str]:
        return self.names("student")

    def student_names(self) -> list[tuple[str, str, str]]:
        """(username, first name, last name) of each student, for the gradebook."""
        return [(p.username, p.first_name, p.last_name) for p in self.people if p.role == "student"]

    def sections(self) -> dict[str, str]:
        """{username: section} of each student the roster gives a section."""
        return {p.username: p.section for p in self.people if p.role == "student" and p.section}


def load(path: Path = DEFAULT) -> Roster:
    lines = [line for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    if not lines or [k.strip() for k in csv.reader(lines[:1]).__next__()] not in HEADERS:
        raise RosterError(f"{path}: the first line must be the header 'username,role' or "
                          f"'username,role,first_name,last_name', either one optionally followed by ',section'")
    people, seen = [], set()
    for number, row in enumerate(rows, start=2):
        name, role = (row.get("username") or "").strip(), (row.get("role") or "").strip()
        if not NAME.fullmatch(name):
            raise RosterError(f"{path}, row {number}: {name!r} is not a valid Unix user name")
        if role not in ROLES:
            raise RosterError(f"{path}, row {number}: role {role!r} must be one of {', '.join(ROLES)}")
        if name in seen:
            raise RosterError(f"{path}, row {number}: {name} is listed twice")
        section = (row.get("section") or "").strip()
        if section and not SECTION.fullmatch(section):
            raise RosterError(f"{path}, row {number}: section {section!r} must be letters, digits, spaces, '_', "
                              f"'.' or '-' (at most 64, starting with a letter or digit)")
        seen.add(name)
        people.append(Person(name, role, (row.get("first_name") or "").strip(), (row.get("last_name") or "").strip(),
                             section))
    if not any(p.grades for p in people) or not any(p.role == "student" for p in people):
        raise RosterError(f"{path}: a course needs at least one instructor or TA and one student")
    return Roster(tuple(people))
