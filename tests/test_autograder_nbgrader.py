"""`nbgrader autograde` with the course's configuration grades with the hidden suites: scores land
in the gradebook per task id, feedback names the checks without the hidden code, export works."""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import hidden_code_lines
from course_tools.build import tool_env
from course_tools.demo_class import MISTAKES, apply_edits
from course_tools.grading.suite.run import graded_tasks
from fixtures.hostile_values import DEEP_FRAME

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_forward_ops"


def _nbgrader(course, *args):
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=tool_env(),
                            capture_output=True, text=True, timeout=900)
    return result


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
    assert _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force").returncode == 0
    solution = nbformat.read(str(ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)
    blank = nbformat.read(str(course / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)

    wrong = apply_edits(solution, MISTAKES[ASSIGNMENT])  # transpose that reverses every axis, like NumPy's .T
    hostile = nbformat.from_dict(json.loads(json.dumps(solution)))
    hostile.cells.append(nbformat.v4.new_code_cell("import os\nos._exit(0)"))
    trimmed = nbformat.from_dict(json.loads(json.dumps(solution)))  # graded cells deleted
    trimmed.cells = [c for c in trimmed.cells
                     if not (c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code")]
    nested = nbformat.from_dict(json.loads(json.dumps(solution)))  # a reply nested 100,000 levels deep
    nested.cells.append(nbformat.v4.new_code_cell(DEEP_FRAME))
    unnamed = nbformat.from_dict(json.loads(json.dumps(solution)))  # graded cells without their ids
    for cell in unnamed.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            del meta["grade_id"]
            cell.source = "pass"
    unnamed.cells.append(nbformat.v4.new_code_cell("pass", metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "points": 100, "schema_version": 3}}))
    submissions = {"alice": solution, "bob": blank, "carol": wrong, "dave": hostile, "frank": trimmed,
                   "grace": nested, "hank": unnamed}
    for student, nb in submissions.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / f"{ASSIGNMENT}.ipynb"))
    erin = course / "submitted" / "erin" / ASSIGNMENT
    erin.mkdir(parents=True)
    (erin / f"{ASSIGNMENT}.ipynb").write_text("{ not a notebook")
    result = _nbgrader(course, "autograde", ASSIGNMENT, "--create")
    return course, result


def _scores(course, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course}/gradebook.db") as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, student)
        return {g.name: (g.score, g.max_score) for nb in submission.notebooks for g in nb.grades}


def test_autograde_scores_every_student_and_the_batch_survives_bad_ones(graded_course):
    course, result = graded_course
    points = graded_tasks(ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    alice = _scores(course, "alice")
    assert {t: alice[t] for t in points} == {t: (p, p) for t, p in points.items()}
    assert all(score == 0 for score, _ in _scores(course, "bob").values())
    carol = _scores(course, "carol")
    assert carol["forward_transpose"][0] < carol["forward_transpose"][1]
    assert all(carol[t] == (p, p) for t, p in points.items() if t not in ("forward_transpose", "forward_matmul"))
    assert all(score == 0 for score, _ in _scores(course, "dave").values())
    frank = _scores(course, "frank")  # deleted graded cells came back and were graded by task id
    assert {t: frank[t] for t in points} == {t: (p, p) for t, p in points.items()}
    hank = _scores(course, "hank")  # ids deleted (nbgrader's own DeduplicateIds stopped): cells restored
    assert {t: hank[t] for t in points} == {t: (p, p) for t, p in points.items()} and len(hank) == len(points)
    assert "erin" in result.stderr or "erin" in result.stdout  # nbgrader reports the corrupt file
    grace = _scores(course, "grace")  # her garbage frame costs the check that sent it, nothing else
    assert grace["forward_negate"][0] < grace["forward_negate"][1]
    assert all(grace[t] == (p, p) for t, p in points.items() if t != "forward_negate")


def test_feedback_explains_checks_and_never_shows_hidden_code(graded_course):
    course, _ = graded_course
    result = _nbgrader(course, "generate_feedback", ASSIGNMENT)
    assert result.returncode == 0, result.stderr[-2000:]
    html = (course / "feedback" / "carol" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Hidden checks for forward_transpose" in html and "\N{BALLOT X}" in html
    assert not [line for line in hidden_code_lines() if line in html]
    grace = " ".join((course / "feedback" / "grace" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text().split())
    assert "Hidden checks for forward_negate" in grace and "nested more than" in grace


def test_grades_export_to_csv(graded_course):
    course, _ = graded_course
    result = _nbgrader(course, "export", "--to", str(course / "grades.csv"))
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {r["student_id"]: r for r in csv.DictReader(open(course / "grades.csv"))}
    assert float(rows["alice"]["score"]) > float(rows["carol"]["score"]) > float(rows["bob"]["score"]) == 0


def test_a_grading_error_fails_autograde_visibly_and_stores_no_score(tmp_path):
    """The sandbox cannot start (no bubblewrap, and --unsandboxed was not asked for): nbgrader's
    autograde fails for the student, and the gradebook keeps no submission, so no 0 is exported."""
    import os

    from nbgrader.api import Gradebook, MissingEntry

    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
    assert _nbgrader(course, "generate_assignment", ASSIGNMENT, "--force").returncode == 0
    folder = course / "submitted" / "alice" / ASSIGNMENT
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", folder)
    env = {**tool_env(), "COURSE_GRADER_NO_BWRAP": "1"}
    env.pop("COURSE_GRADER_UNSANDBOXED", None)
    failed = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", ASSIGNMENT, "--create"], cwd=course,
                            env=env, capture_output=True, text=True, timeout=900)
    assert failed.returncode != 0 and "bubblewrap is not installed" in failed.stdout + failed.stderr
    with Gradebook(f"sqlite:///{course}/gradebook.db") as gradebook:
        with pytest.raises(MissingEntry):
            gradebook.find_submission(ASSIGNMENT, "alice")
    # nbgrader removes the half-written assignment folder; it may leave alice's empty folder behind
    assert not (course / "autograded" / "alice" / ASSIGNMENT).exists()
    assert not list((course / ".hidden_suite_results").rglob("*.json")) if (course / ".hidden_suite_results").exists() else True
    again = _nbgrader(course, "autograde", ASSIGNMENT, "--create")  # the machine fixed: graded as usual
    assert again.returncode == 0, again.stderr[-2000:]
    points = graded_tasks(ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    assert {t: _scores(course, "alice")[t] for t in points} == {t: (p, p) for t, p in points.items()}
    assert os.environ.get("COURSE_GRADER_NO_BWRAP") is None
