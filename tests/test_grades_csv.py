"""grades.csv (course_tools/grades_csv.py): nbgrader's own CSV export on a real gradebook, its
scores rounded as formgrader shows them."""
from __future__ import annotations

import csv


def _gradebook_with_a_float_sum(course):
    """A course's gradebook where a student's three task scores sum to 25.647100000000002 in
    floating point (as one did on the hub), and a student who submitted nothing."""
    with course.gradebook(must_exist=False) as gradebook:
        gradebook.add_assignment("04_conv_backward")
        gradebook.add_notebook("04_conv_backward", "04_conv_backward")
        for task, points in (("a", 10), ("b", 10), ("c", 10)):
            gradebook.add_grade_cell(task, "04_conv_backward", "04_conv_backward", max_score=points, cell_type="code")
        for student in ("ada", "ben"):
            gradebook.add_student(student, first_name=student.title())
        gradebook.add_submission("04_conv_backward", "ada")
        for task, score in (("a", 8.8471), ("b", 8.4), ("c", 8.4)):
            gradebook.find_grade(task, "04_conv_backward", "04_conv_backward", "ada").auto_score = score
        gradebook.db.commit()
        raw = gradebook.find_submission("04_conv_backward", "ada").score
    assert raw != round(raw, 2), raw  # the float noise this is about, or the test proves nothing
    return raw


def _export(course, tmp_path) -> dict[str, dict]:
    """grades.csv through the export plugin of the bundle's configuration (as course init loads it), by student."""
    from nbgrader.plugins.export import ExportPlugin

    plugin_class = course.config.ExportApp.plugin_class
    module, name = plugin_class.rsplit(".", 1)
    plugin = getattr(__import__(module, fromlist=[name]), name)(to=str(tmp_path / "grades.csv"))
    assert isinstance(plugin, ExportPlugin)
    with course.gradebook() as gradebook:
        plugin.export(gradebook)
    with open(tmp_path / "grades.csv", newline="") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def test_the_configured_export_rounds_scores_as_formgrader_shows_them(tmp_path):
    from course_tools.course_dir import init_course

    course = init_course(tmp_path / "course", "grades", exchange=tmp_path / "exchange")
    raw = _gradebook_with_a_float_sum(course)
    rows = _export(course, tmp_path)
    assert rows["ada"]["raw_score"] == "25.65" == f"{raw:.2f}" and rows["ada"]["score"] == "25.65"
    assert rows["ada"]["max_score"] == "30.0" and rows["ben"]["raw_score"] == "0.0"


def test_the_export_gives_each_students_own_deadline_beside_the_assignments(tmp_path):
    """ada's submission carries a 2-day extension (as `course grade` writes it into the gradebook):
    her row's student_duedate is 2 days after the duedate; ben (no extension, no submission) has
    the assignment's. nbgrader's own columns stay where they were."""
    import datetime

    from course_tools.course_dir import init_course

    course = init_course(tmp_path / "course", "grades", exchange=tmp_path / "exchange")
    _gradebook_with_a_float_sum(course)
    with course.gradebook() as gradebook:
        gradebook.find_assignment("04_conv_backward").duedate = datetime.datetime(2027, 3, 20, 12, 0)
        gradebook.find_submission("04_conv_backward", "ada").extension = datetime.timedelta(days=2)
        gradebook.db.commit()
    rows = _export(course, tmp_path)
    assert (rows["ada"]["duedate"], rows["ada"]["student_duedate"]) == ("2027-03-20 12:00:00", "2027-03-22 12:00:00")
    assert rows["ben"]["duedate"] == rows["ben"]["student_duedate"] == "2027-03-20 12:00:00"
    header = (tmp_path / "grades.csv").read_text().splitlines()[0].split(",")
    assert header[:4] == ["assignment", "duedate", "student_duedate", "timestamp"] and header[-1] == "max_score"


def test_a_file_whose_rows_do_not_match_its_header_is_left_as_it_is(tmp_path):
    from course_tools.grades_csv import round_scores

    path = tmp_path / "grades.csv"
    text = "student_id,first_name,raw_score\nada,Ada, the first,25.647100000000002\n"  # unquoted comma
    path.write_text(text)
    assert not round_scores(path) and path.read_text() == text
