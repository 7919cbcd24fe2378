"""Demonstration cells (course_tools/demonstrations.py): skipped when grading, and only where
nothing graded can depend on them."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from course_lib import tasks
from course_tools.build import release_notebook
from course_tools.demonstrations import is_demonstration, problems
from course_tools.grading.session.session import program_cells

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("assignment", list(tasks.ASSIGNMENTS))
def test_skipping_the_demonstrations_changes_nothing_graded(assignment):
    nb = nbformat.read(str(ROOT / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
    suite = "\n".join(p.read_text() for p in (ROOT / "autograder" / assignment).glob("*.py"))
    assert problems(nb, suite) == []
    release = nbformat.read(str(release_notebook(assignment)), as_version=4)
    marked = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if is_demonstration(c)]
    assert marked == [c.metadata["nbgrader"]["grade_id"] for c in release.cells if is_demonstration(c)], \
        "the release keeps the demonstration marks (grading reads them from there)"
    run = {c["grade_id"] for c in program_cells(nb, release)}
    assert not set(marked) & run


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for i, (source, demo) in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["nbgrader"] = {"grade_id": f"c{i}", "locked": True, "solution": False, "grade": False}
        if demo:
            cell.metadata["course"] = {"demonstration": True}
        nb.cells.append(cell)
    return nb


def test_a_name_only_a_demonstration_defines_cannot_be_skipped():
    nb = _notebook(("import numpy as np\nx = np.arange(3)", False), ("table = x * 2\nprint(table)", True),
                   ("def f():\n    return table.sum()\ny = f()", False))
    assert problems(nb) == ["c2 reads table, which only the demonstration cell c1 defines"]
    assert problems(_notebook(("fig = 1", True), ("fig = 2\nprint(fig)", False))) == []
    assert problems(_notebook(("answer = 42", True)), 'student.variable("answer")') == [
        "demonstration cell c0 defines answer, which the hidden suite reads"]


def test_a_student_cannot_mark_their_own_cells_away():
    release = _notebook(("x = 1", False))
    submitted = _notebook(("x = 1\nsabotage = True", True))
    assert [c["source"] for c in program_cells(submitted, release)] == ["x = 1"]  # locked: the release's text
    # Each cell keeps its place in the student's notebook (markdown and skipped cells counted).
    assert all(submitted.cells[c["position"] - 1].metadata.get("nbgrader", {}).get("grade_id") == c["grade_id"]
               for c in program_cells(submitted, release))
    unlocked = nbformat.v4.new_code_cell("mine = 2")
    unlocked.metadata["course"] = {"demonstration": True}
    submitted.cells.append(unlocked)
    assert "mine = 2" in [c["source"] for c in program_cells(submitted, release)]
