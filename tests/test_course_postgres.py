"""A PostgreSQL gradebook (nbgrader's db_url) with several graders at once: two `course grade`
processes, each with parallel workers, grade halves of a class against one real server."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import gradebook_task_scores
from course_tools.build import release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import Course
from course_tools.demo_class import MISTAKE_BREAKS, PERSONAS, DemoClass
from course_tools.grading.suite.run import graded_tasks

ASSIGNMENT = "01_forward_ops"
POINTS = graded_tasks(release_notebook(ASSIGNMENT))


def test_two_graders_grade_in_parallel_against_one_postgres_gradebook(postgres_url, tmp_path):
    demo = DemoClass(tmp_path, ASSIGNMENT, personas=[p for p in PERSONAS if not p.late])
    folder = str(demo.course_dir)
    assert course(["init", folder, "--course-id", "demo", "--exchange", str(demo.exchange),
                   "--db-url", postgres_url]) == 0
    assert course(["release", ASSIGNMENT, "--course", folder]) == 0
    for persona in demo.personas:
        assert demo.fetch(persona.student) == 0
        assert demo.submit(persona) == 0
    assert course(["collect", ASSIGNMENT, "--course", folder]) == 0

    students = [p.student for p in demo.personas]
    halves = [students[::2], students[1::2]]
    script = Path(sys.executable).parent / "course"
    graders = [subprocess.Popen([str(script), "grade", ASSIGNMENT, "--course", folder, "--workers", "2",
                                 *[arg for s in half for arg in ("--student", s)]],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for half in halves]
    for grader in graders:
        out, _ = grader.communicate(timeout=900)
        assert grader.returncode == 0, out[-3000:]

    course_folder = Course(demo.course_dir)
    assert course_folder.db_url == postgres_url
    with course_folder.gradebook() as gradebook:
        scores = gradebook_task_scores(gradebook, ASSIGNMENT, POINTS)
    assert set(scores) == set(students)
    assert scores["ada"] == POINTS
    assert all(score == 0 for score in scores["ben"].values())
    assert {t for t, s in scores["cleo"].items() if s < POINTS[t]} == MISTAKE_BREAKS[ASSIGNMENT]
    assert {t for t, s in scores["dan"].items() if s < POINTS[t]} == {"forward_negate"}
    # the class report reads the PostgreSQL gradebook as it reads SQLite's
    from course_tools.report import data as report_data
    from course_tools.report.page import Report

    data = report_data.load(course_folder, ASSIGNMENT)
    report = Report(data)
    transpose = next(t for t in report.tasks if t.task == "forward_transpose")
    assert transpose.share("full") == sum(scores[s]["forward_transpose"] == POINTS["forward_transpose"]
                                          for s in students) / len(students)
    assert "forward_negate" in report.summary() and "<h2>Tasks</h2>" in report.html()
