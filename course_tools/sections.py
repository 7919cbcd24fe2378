"""Sections: which students belong to which group of the class (a lab, a tutorial), as the roster
given to `course init --roster` says (its optional ``section`` column, hub/roster.py).

They live in the course's database (the gradebook's ``db_url``), in the table
``course_sections``: one row per student. `course extend --section NAME` asks ``members`` for
the students it extends; nothing here grants anything.
"""
from __future__ import annotations

from sqlalchemy import Column, MetaData, String, Table, create_engine, inspect, select

from .course_dir import Course, CourseError
from .gradebook_tables import create_racing_others

metadata = MetaData()
table = Table(
    "course_sections", metadata,
    Column("student", String(128), primary_key=True),
    Column("section", String(64), nullable=False),
)


def record(course: Course, sections: dict[str, str]) -> None:
    """Store {student: section} (a student's row is replaced: the latest roster says)."""
    if not sections:
        return
    engine = create_engine(course.db_url)
    try:
        create_racing_others(lambda: metadata.create_all(engine, checkfirst=True))
        with engine.begin() as conn:
            conn.execute(table.delete().where(table.c.student.in_(list(sections))))
            conn.execute(table.insert(), [dict(student=s, section=name) for s, name in sections.items()])
    finally:
        engine.dispose()


def all_sections(course: Course) -> dict[str, list[str]]:
    """{section: [students]}, sorted; empty when the roster gave none (nothing is created by reading)."""
    if course.db_url.startswith("sqlite:///") and not course.gradebook_exists():
        return {}
    engine = create_engine(course.db_url)
    try:
        if not inspect(engine).has_table(table.name):
            return {}
        with engine.begin() as conn:
            rows = list(conn.execute(select(table.c.section, table.c.student).order_by(table.c.student)))
    finally:
        engine.dispose()
    found: dict[str, list[str]] = {}
    for section, student in rows:
        found.setdefault(section, []).append(student)
    return dict(sorted(found.items()))


def members(course: Course, section: str) -> list[str]:
    """The students of ``section``; a CourseError naming the sections there are when it is unknown."""
    known = all_sections(course)
    if section in known:
        return known[section]
    if not known:
        raise CourseError(f"unknown section {section!r}: this course has no sections (give `course init --roster` "
                          f"a roster with a 'section' column)")
    raise CourseError(f"unknown section {section!r}: the roster's sections are {', '.join(map(repr, known))}")
