"""Build nbgrader source notebooks from Python, with the course's conventions for cell ids.

    nb = Notebook("01_forward_ops")
    nb.md("# Forward ops ...")
    nb.code("import numpy as np", locked=True, cell_id="setup")
    nb.solution("forward_power_scalar", "def ...:\\n    ### BEGIN SOLUTION\\n    ...\\n    ### END SOLUTION")
    nb.tests("forward_power_scalar", "assert_close(...)", points=2)
    nb.answer("conv_derivation", "### BEGIN SOLUTION\\n...model answer and mark scheme...\\n### END SOLUTION", points=4)
    nb.save()   # -> source/01_forward_ops/01_forward_ops.ipynb

Conventions (checked by tests/test_notebooks.py):
- a graded cell's grade_id is the task id (course_lib/tasks.py); it carries the points;
- the solution cell of a task has grade_id "<task>_code";
- other cells that nbgrader locks have ids "<assignment-local name>" given by ``cell_id``.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

SOURCE = Path(__file__).resolve().parents[1] / "source"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _meta(grade_id: str, *, grade=False, solution=False, locked=False, points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


class Notebook:
    def __init__(self, assignment: str):
        self.assignment = assignment
        self.nb = nbformat.v4.new_notebook()
        self.nb.metadata = {"kernelspec": KERNELSPEC,
                            "language_info": {"name": "python"},
                            "course": {"assignment": assignment}}

    def _add(self, cell):
        cell.id = f"c{len(self.nb.cells):03d}"  # stable ids keep builds reproducible
        self.nb.cells.append(cell)
        return cell

    def md(self, text: str, *, locked: bool = False, cell_id: str | None = None):
        meta = _meta(cell_id, locked=True) if locked else {}
        return self._add(nbformat.v4.new_markdown_cell(text.strip("\n"), metadata=meta))

    def code(self, src: str, *, locked: bool = False, cell_id: str | None = None):
        meta = _meta(cell_id, locked=True) if locked else {}
        return self._add(nbformat.v4.new_code_cell(src.strip("\n"), metadata=meta))

    def solution(self, task: str, src: str):
        return self._add(nbformat.v4.new_code_cell(src.strip("\n"), metadata=_meta(f"{task}_code", solution=True)))

    def tests(self, task: str, src: str, points: float):
        return self._add(nbformat.v4.new_code_cell(
            src.strip("\n"), metadata=_meta(task, grade=True, locked=True, points=points)))

    def answer(self, task: str, text: str, points: float):
        """A written answer graded by hand in formgrader (markdown)."""
        return self._add(nbformat.v4.new_markdown_cell(
            text.strip("\n"), metadata=_meta(task, grade=True, solution=True, points=points)))

    def save(self, path: Path | None = None) -> Path:
        path = path or SOURCE / self.assignment / f"{self.assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.validate(self.nb)
        nbformat.write(self.nb, str(path))
        return path
