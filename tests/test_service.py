"""The grading service (`course serve`), for real: nbgrader's exchange and fetch_feedback, the
sandboxed hidden suites, the queue in SQLite and PostgreSQL, `kill -9` in mid-grading."""
from __future__ import annotations

import json
import re
import time

import pytest

from conftest import gradebook_task_scores, hidden_code_lines
from course_tools.build import release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import Course
from course_tools.demo_class import Persona
from course_tools.grading.suite.run import graded_tasks
from course_tools.service.publish import feedback_folder
from grading_support import require_sandbox
from service_support import (ASSIGNMENT, blank, drop, filled_release, kill_9, page_of, released_course, rows, serve,
                             variant, wait_for, with_mistake)

require_sandbox()
POINTS = graded_tasks(release_notebook(ASSIGNMENT))
POLICY = 'c.GradingService.assignments = {"01_forward_ops": {"attempts_per_day": 1}}'


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return released_course(tmp_path_factory.mktemp("service"), policy=POLICY)


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _fetched_pages(demo, student: str, found: bool = True) -> list[str]:
    """Every feedback page ``student`` fetches with nbgrader's fetch_feedback, oldest submission first."""
    assert demo.fetch(student, feedback=True) == (0 if found else 1)
    folder = demo.home(student) / ASSIGNMENT / "feedback"
    return [p.read_text() for p in sorted(folder.glob("*/*.html"))]


def test_students_fetch_feedback_of_each_submission_under_the_policy_and_the_final_grading_agrees(demo, capsys):
    """Through nbgrader's submit and fetch_feedback: checks without points, the diagnosis, a fixed
    resubmission passing, the day's attempt limit, nobody else's feedback; then `course grade`
    (fresh, after the deadline) gives the scores the service gave."""
    def submit(student, make):
        if not (demo.home(student) / ASSIGNMENT).exists():
            assert demo.fetch(student) == 0
        assert demo.submit(Persona(student, "", make)) == 0

    submit("ada", with_mistake)
    submit("cleo", with_mistake)
    serve(demo, "--once", "--workers", "2")
    for make in (filled_release, blank):   # the fix, then a third attempt on the same day
        time.sleep(1.1)                    # nbgrader names submissions to the second
        submit("cleo", make)
    serve(demo, "--once")

    first, fixed, third = (_text(p) for p in _fetched_pages(demo, "cleo"))
    assert "forward_transpose: \N{BALLOT X} failed" in first and "14 of 15 tasks pass" in first
    assert "known mistake: the default transpose reverses every axis" in first
    assert "wrong shape" in first and "points" not in first.lower()      # checks, no points
    assert "15 of 15 tasks pass" in fixed and "\N{BALLOT X}" not in fixed
    assert "graded attempts of 01_forward_ops are used up (1 a day" in third and "next graded attempt is possible from" in third
    # Every graded page says what it did to the day's attempts (cleo's first notebook is ada's: kept, no attempt).
    assert "used no graded attempt; 0 of 1 are used today (UTC day). 1 is left." in first
    assert "This submission used graded attempt 1 of 1 today (UTC day). None is left: your next graded attempt " \
           "is possible from" in fixed
    for text in (first, fixed):
        assert not any(line in text for line in hidden_code_lines())
    assert _fetched_pages(demo, "ben", found=False) == []   # no submission of his own: nothing to fetch
    assert feedback_folder(demo.exchange, "demo").stat().st_mode & 0o777 == 0o711  # nobody lists it

    queued = {r["folder"]: r for r in rows(demo)}
    assert sorted(r["outcome"] for r in queued.values()) == ["graded", "graded", "over_limit", "reused"]
    # cleo's first notebook is ada's: graded once (ada's, claimed first), reused for cleo, using no attempt
    assert sum(r["gradings"] for r in queued.values()) == 2
    (ada,) = [r for r in queued.values() if r["student"] == "ada"]
    service_scores = {task: score for task, (score, _) in json.loads(ada["scores"]).items()}

    folder = str(demo.course_dir)
    assert course(["collect", ASSIGNMENT, "--course", folder]) == 0
    assert course(["grade", ASSIGNMENT, "--course", folder, "--student", "ada", "--fresh", "--workers", "2"]) == 0
    with Course(demo.course_dir).gradebook() as gradebook:
        final = gradebook_task_scores(gradebook, ASSIGNMENT, POINTS)["ada"]
    assert final == service_scores and final["forward_transpose"] < POINTS["forward_transpose"]
    capsys.readouterr()
    assert course(["status", "--course", folder]) == 0
    assert "grading service (course serve): 0 waiting, 0 grading, 4 done, 0 grading errors" in capsys.readouterr().out


def test_kill_9_in_mid_grading_with_twenty_queued_then_a_restart_grades_each_exactly_once(demo):
    in_flight = drop(demo, "k00", variant(filled_release(ASSIGNMENT), "killed"))
    service = serve(demo, "--workers", "1", "--rescan", "1", wait=False)
    wait_for(lambda: any(r["folder"] == in_flight and r["state"] == "grading" for r in rows(demo)), 120,
             "the first submission being graded")
    queued = [drop(demo, f"k{i:02d}", variant(filled_release(ASSIGNMENT), "queued")) for i in range(1, 21)]
    wait_for(lambda: sum(r["folder"] in queued for r in rows(demo)) == 20, 60, "twenty submissions queued")
    states = {r["folder"]: r["state"] for r in rows(demo)}
    assert states[in_flight] == "grading" and all(states[f] == "queued" for f in queued)
    kill_9(service)

    out = serve(demo, "--once", "--workers", "1")
    assert "put back 1 submission " in out
    mine = [r for r in rows(demo) if r["folder"] in [in_flight, *queued]]
    assert len(mine) == 21 and all(r["state"] == "done" for r in mine)
    assert sum(r["gradings"] for r in mine) == 2                 # two distinct notebooks, each graded once
    assert [r["attempts"] for r in mine] == [2] + [1] * 20       # only the killed one was claimed again
    pages = [page_of(demo, r) for r in mine]
    assert len({json.dumps(json.loads(r["feedback_names"])) for r in mine}) == 21
    assert all("15 of 15 tasks pass" in _text(p) for p in pages)


def test_a_hanging_submission_holds_one_worker_and_gets_not_graded_yet_never_a_score(demo, capsys):
    hang = variant(filled_release(ASSIGNMENT), "hang")
    hang.cells.insert(1, hang.cells.pop())
    hang.cells[1].source = "while True:\n    pass"
    hanging = drop(demo, "h01", hang)
    honest = drop(demo, "h02", variant(with_mistake(ASSIGNMENT), "honest"))
    serve(demo, "--once", "--workers", "2", "--timeout", "40")
    found = {r["folder"]: r for r in rows(demo)}
    assert found[honest]["state"] == "done" and found[honest]["finished_at"] < found[hanging]["finished_at"]
    assert found[hanging]["state"] == "grading_error" and found[hanging]["scores"] is None
    assert "ran for more than 40 s" in found[hanging]["error"]
    assert "ran for more than 40 s, its time limit" in _text(page_of(demo, found[hanging]))
    assert found[hanging]["counted"] and found[hanging]["outcome"] == "timed_out"   # the attempt stays used
    capsys.readouterr()
    assert course(["status", ASSIGNMENT, "--course", str(demo.course_dir)]) == 0
    out = capsys.readouterr().out
    assert "1 grading error" in out and f"GRADING ERROR h01 {ASSIGNMENT}" in out


def test_two_services_on_one_postgres_queue_after_a_kill_9_grade_each_row_once(postgres_url, tmp_path):
    demo = released_course(tmp_path, db_url=postgres_url)
    first = drop(demo, "p00", variant(filled_release(ASSIGNMENT), "pg-killed"))
    service = serve(demo, "--workers", "1", "--rescan", "1", wait=False)
    wait_for(lambda: any(r["state"] == "grading" for r in rows(demo, postgres_url)), 120, "a grading under way")
    others = [drop(demo, f"p{i:02d}", variant(blank(ASSIGNMENT), "pg")) for i in range(1, 7)]
    kill_9(service)

    two = [serve(demo, "--once", "--workers", "1", wait=False) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in two]
    assert [p.returncode for p in two] == [0, 0], outs
    found = rows(demo, postgres_url)
    assert {r["folder"] for r in found} == {first, *others} and all(r["state"] == "done" for r in found)
    assert sum(r["gradings"] for r in found) == 2                 # two distinct notebooks, each graded once
    assert [r["attempts"] for r in found] == [2] + [1] * 6        # no row claimed by both services


def test_a_list_grade_id_in_one_notebook_never_stops_the_service_and_its_student_is_told(demo):
    """A code cell whose grade_id is a list (valid nbformat) made the intake raise TypeError and
    `course serve` exit, at every restart. Now the classmate is graded, and the student's page
    names the cell metadata that is wrong."""
    odd = variant(filled_release(ASSIGNMENT), "list-grade-id")
    cell = next(c for c in odd.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id"))
    cell.metadata.nbgrader.grade_id = [cell.metadata.nbgrader.grade_id]
    bad = drop(demo, "m01", odd)
    honest = drop(demo, "m02", variant(filled_release(ASSIGNMENT), "beside-a-list-grade-id"))
    serve(demo, "--once", "--workers", "1")   # exits 0 (serve asserts it)
    found = {r["folder"]: r for r in rows(demo)}
    assert found[honest]["state"] == "done" and "15 of 15 tasks pass" in _text(page_of(demo, found[honest]))
    # The student's own mistake (service/mistakes.py): not graded, no attempt used, not retried
    assert found[bad]["state"] == "done" and found[bad]["outcome"] == "mistake"
    assert "cell metadata that nbgrader never writes" in _text(page_of(demo, found[bad]))
