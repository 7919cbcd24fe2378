"""`course export --format canvas|moodle` (course_tools/lms/import_csv.py): the grade import files of
Canvas and Moodle for a small class, checked against each format's column rules, with grades.csv's
scores."""
from __future__ import annotations

import csv

from lms_class import ASSIGNMENT, export_scores, grade_class

STUDENTS = [("ada", "Ada", "Lovelace", "ada@example.edu"), ("zoe", "Zoë", "Ñúñez, Jr.", "zoe@example.edu"),
            ("ben", "", "", "")]


def _small_class(tmp_path):
    from course_tools.course_dir import init_course

    course = init_course(tmp_path / "course", "csvtest", exchange=tmp_path / "exchange")
    with course.gradebook(must_exist=False) as gradebook:
        for sid, first, last, email in STUDENTS:
            gradebook.add_student(sid, first_name=first or None, last_name=last or None, email=email or None)
    grade_class(course, skip=("ben",), pending=(), late=("zoe",))
    return course


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_the_canvas_file_follows_canvas_column_rules(tmp_path, capsys):
    from course_tools.cli import main

    course = _small_class(tmp_path)
    out = tmp_path / "canvas.csv"
    assert main(["export", "--format", "canvas", "--to", str(out), "--course", str(course.root)]) == 0
    rows = _read(out)
    # Canvas: the five columns it owns, in its order, then one column per assignment
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == 15.0
    assert all(len(row) == len(rows[0]) for row in rows)
    people = {row[3]: row for row in rows[2:]}     # SIS Login ID: the course's student id
    assert set(people) == {"ada", "zoe", "ben"}
    assert people["zoe"][0] == "Ñúñez, Jr., Zoë" and people["ada"][0] == "Lovelace, Ada"   # "Last, First"
    assert people["ben"][0] == "ben"   # no name: the id, so that the row is never nameless
    expected = export_scores(course)
    for sid, row in people.items():
        assert float(row[5]) == expected[sid][0], sid
        assert row[0] or row[1] or row[2] or row[3]   # every row names its student somehow
    assert '"Ñúñez, Jr., Zoë"' in out.read_text(encoding="utf-8")   # quoted: a comma in the cell


def test_the_moodle_file_follows_moodle_column_rules(tmp_path):
    from course_tools.lms.import_csv import MOODLE_FIRST, write

    course = _small_class(tmp_path)
    out = tmp_path / "moodle.csv"
    assert write(course, "moodle", out) == 3
    rows = _read(out)
    header = rows[0]
    assert header == MOODLE_FIRST + [ASSIGNMENT] and len(set(header)) == len(header)   # Moodle refuses duplicates
    expected = export_scores(course)
    for row in rows[1:]:
        sid = row[2]
        assert row[4] == sid and float(row[5]) == expected[sid][0]
        assert row[5].replace(".", "", 1).isdigit()    # a plain number, '.' as the decimal point
        assert 0 <= float(row[5]) <= expected[sid][1]  # never above the item's maximum
    zoe = next(row for row in rows if row[2] == "zoe")
    assert zoe[:4] == ["Zoë", "Ñúñez, Jr.", "zoe", "zoe@example.edu"]


def test_an_unknown_format_or_an_exporter_with_one_is_refused(tmp_path, capsys):
    from course_tools.cli import main

    course = _small_class(tmp_path)
    assert main(["export", "--format", "canvas", "--exporter", "x.Y", "--course", str(course.root)]) != 0
    assert "--exporter goes with the nbgrader format only" in capsys.readouterr().err
