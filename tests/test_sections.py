"""Sections of the roster (hub/roster.csv's optional 'section' column): read, checked, and kept in
the course's database by `course init --roster` for `course extend --section` (whose use is in
tests/test_extensions.py)."""
from __future__ import annotations

import pytest

from course_tools.hub import roster as rosters


def test_a_roster_may_give_each_student_a_section(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("username,role,first_name,last_name,section\ndemo-t,ta,Tom,T,\ndemo-s,student,Sam,S,lab 1\n"
                    "demo-u,student,Uma,U,\n")
    roster = rosters.load(path)
    assert roster.sections() == {"demo-s": "lab 1"}
    assert roster.student_names() == [("demo-s", "Sam", "S"), ("demo-u", "Uma", "U")]


@pytest.mark.parametrize("text, error", [
    ("username,role,section\ndemo-t,ta,\ndemo-s,student,lab;1\n", "section 'lab;1' must be letters"),
    ("username,role,group\ndemo-t,ta,\ndemo-s,student,lab 1\n", "optionally followed by ',section'"),
])
def test_a_bad_section_column_says_what_is_wrong(tmp_path, text, error):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(rosters.RosterError, match=error):
        rosters.load(path)
