"""A student's own mistake is theirs, in `course serve`: their page says what is wrong, it is not
retried, uses no graded attempt and is no grading error (service/mistakes.py); and nothing a
student names (a folder, a file, a grade id) reaches the instructor's terminal as control codes
(terminal.PrintableFormatter).

Students submit with nbgrader's own submit (course_student) and read their pages with its
fetch_feedback: amy renamed her notebook my_work.ipynb, bob's is not JSON, cleo handed in
02_backward_ops's notebook, dan edited a locked cell. mallory, by hand in the exchange, names
her folder and a locked cell's grade id with escape codes that clear the screen, set the
terminal's title and draw a fake result.
"""
from __future__ import annotations

import json
import re
import shutil

import nbformat
import pytest
from grading_support import require_sandbox
from service_support import ASSIGNMENT, drop, released_course, rows, serve

from course_lib.tasks import ASSIGNMENTS
from course_tools.build import release_notebook
from course_tools.demo_class import Persona, filled_release
from course_tools.service.pages import NOT_GRADED_YET
from course_tools.service.queue import DONE

require_sandbox()

FORGED = "\x1b]0;owned\x07\x1b[2J\x1b[HALL 10 TASKS PASSED\r"
OTHER = "02_backward_ops"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return released_course(tmp_path_factory.mktemp("mistakes"))


def _submit(demo, student: str, change) -> None:
    """``student`` fetches, does the work, ``change`` spoils it in their folder, then nbgrader's own
    submit (the hub's Assignments tab; `course submit` would refuse a missing notebook first)."""
    from course_student import commands

    assert demo.fetch(student) == 0
    demo.do_work(Persona(student, "", filled_release))
    change(demo.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    with demo.account(student):
        commands._nbgrader("submit", ASSIGNMENT, demo.home(student).resolve(),
                           commands._exchange_args(**demo.student_args(student)), f"submitting {ASSIGNMENT}")


def _rename(path):
    path.rename(path.with_name("my_work.ipynb"))


def _garble(path):
    path.write_text("this is not a notebook {")


def _other_assignment(path):
    path.write_text(release_notebook(OTHER).read_text())


def _edit_locked_cell(path, grade_id: str | None = None):
    nb = nbformat.read(str(path), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("locked"))
    cell.source += "\n# changed"
    if grade_id is not None:
        cell.metadata.nbgrader.grade_id = grade_id
    nbformat.write(nb, str(path))


def _text(page: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _fetched(demo, student: str) -> str:
    assert demo.fetch(student, feedback=True) == 0
    pages = sorted((demo.home(student) / ASSIGNMENT / "feedback").glob("*/*.html"))
    assert pages, f"{student} fetched no page"
    return _text(pages[-1].read_text())


def test_a_students_mistakes_are_named_on_their_page_and_the_log_prints_no_control_codes(demo):
    _submit(demo, "amy", _rename)
    _submit(demo, "bob", _garble)
    _submit(demo, "cleo", _other_assignment)
    _submit(demo, "dan", _edit_locked_cell)
    hostile = nbformat.read(str(release_notebook(ASSIGNMENT)), as_version=4)
    mallory = f"mallory{FORGED}"
    folder = drop(demo, mallory, hostile)
    path = demo.exchange / "demo" / "inbound" / folder / f"{ASSIGNMENT}.ipynb"
    _edit_locked_cell(path, grade_id=FORGED)

    log = serve(demo, "--once")

    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", log), "a control code reached the terminal"
    assert "mallory\\x1b]0;owned\\x07\\x1b[2J" in log        # shown, as escapes, on one line
    forged = [line for line in log.splitlines() if "ALL 10 TASKS PASSED" in line]
    assert forged and all("\\x1b[HALL 10 TASKS PASSED\\r" in line for line in forged)
    assert any(line.count("ALL 10 TASKS PASSED") >= 2 for line in forged)   # the folder's name and the grade id
    found = {r["student"]: r for r in rows(demo)}
    assert set(found) == {"amy", "bob", "cleo", "dan", mallory}
    for student, row in found.items():
        assert (row["state"], row["outcome"], row["gradings"], row["counted"]) == (DONE, "mistake", 0, False), student
        assert row["attempts"] == 1, f"{student}'s mistake was tried again"
    assert "GRADING ERROR" not in log

    pages = {student: _fetched(demo, student) for student in ("amy", "bob", "cleo", "dan")}
    for page in pages.values():
        assert NOT_GRADED_YET not in page and "could not be graded" in page
    assert f"no {ASSIGNMENT}.ipynb: found my_work.ipynb" in pages["amy"]
    assert "not a readable notebook" in pages["bob"]
    assert f"the work of {OTHER}, not of {ASSIGNMENT}" in pages["cleo"]
    assert "matches no release" in pages["dan"] and "(edited)" in pages["dan"]
    assert json.loads(found["amy"]["feedback_names"])  # the row still names the release's page


@pytest.mark.parametrize("assignment", list(ASSIGNMENTS))
def test_no_release_notebook_is_taken_for_a_mistake(assignment, tmp_path):
    """The checks never refuse an assignment's own release (its task ids are its own)."""
    from course_tools.service.mistakes import mistake

    for path in release_notebook(assignment).parent.glob("*.ipynb"):
        shutil.copy(path, tmp_path / path.name)
    names = [p.stem for p in release_notebook(assignment).parent.glob("*.ipynb")]
    assert mistake(assignment, tmp_path, names, None) is None
