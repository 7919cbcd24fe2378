"""nbgrader's OverwriteCells, with graded cells restored where the release has them, and task
cells restored without nbgrader's KeyError on a cell the gradebook does not know.

nbgrader puts a graded cell that is missing from a submission back "after the previous source
cell", looked up among the submission's graded and solution cells only, in the order the
gradebook happens to return its source cells. When that previous cell is missing too (a
submission of an earlier release version, which never had the task; a locked check cell right
before the task's code cell), autograde stops with a KeyError and the student is not graded at
all. Here the order comes from the released notebook itself, and a missing cell goes after the
nearest earlier cell the submission does have (any cell nbgrader knows by id), or first.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import OverwriteCells


class RestoreGradedCells(OverwriteCells):
    def add_missing_grade_cells(self, nb, resources):
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_cells = {cell.name: cell for cell in source_nb.source_cells}
        solution_ids = {cell.name for cell in source_nb.solution_cells}
        order = self._release_order() or list(source_cells)
        # Present as nbgrader counts it: a graded or solution cell of that id. A cell the student
        # re-flagged (say, a graded cell turned into a locked one) does not stand in for it.
        present = {cell.metadata.nbgrader.get("grade_id") for cell in nb.cells
                   if utils.is_grade(cell) or utils.is_solution(cell)}
        for grade_cell in sorted(source_nb.grade_cells, key=lambda c: _rank(order, c.name)):
            if grade_cell.name in present or grade_cell.name not in source_cells:
                continue
            self.log.warning("graded cell %s is missing from the submission: restored from the release",
                             grade_cell.name)
            cell = self.missing_cell_transform(source_cells[grade_cell.name], grade_cell.max_score,
                                               is_solution=grade_cell.name in solution_ids)
            nb.cells.insert(self._insert_at(nb, order, grade_cell.name), cell)
            present.add(grade_cell.name)
        return nb, resources

    def preprocess_cell(self, cell, resources, cell_index):
        """nbgrader's, then: a cell the gradebook does not know (a cell of an earlier release version
        that a later one removed, such as 02's old helpers cell) had its ``grade_id`` deleted by
        nbgrader, which leaves metadata its own validator then refuses ("nbgrader cell does not have
        a grade_id"), so the student was not graded. Such a cell keeps its source and runs as a plain
        cell: the earlier version's checks may call what it defines."""
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if "grade_id" not in cell.metadata.get("nbgrader", {"grade_id": None}):
            del cell.metadata["nbgrader"]
        return cell, resources

    def add_missing_task_cells(self, nb, resources):
        """nbgrader's, less its KeyError: its per-cell step deletes the ``grade_id`` of a cell the
        gradebook does not know (a cell of an earlier release version that a later one removed,
        such as 02's old helpers cell), and its own version of this method then reads ``grade_id``
        from every cell with nbgrader metadata, so autograde stopped and the student was not graded."""
        source_nb = self.gradebook.find_notebook(self.notebook_id, self.assignment_id)
        source_cells = {cell.name: cell for cell in source_nb.source_cells}
        present = {cell.metadata.get("nbgrader", {}).get("grade_id") for cell in nb.cells}
        for task_cell in source_nb.task_cells:
            if task_cell.name not in present and task_cell.name in source_cells:
                nb.cells.append(self.missing_cell_transform(source_cells[task_cell.name], task_cell.max_score,
                                                            is_task=True))
        return nb, resources

    def _release_order(self) -> list[str]:
        """The ids of the released notebook's nbgrader cells, top to bottom; [] when unreadable."""
        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.release_directory, ".", self.assignment_id)) / \
            f"{self.notebook_id}.ipynb"
        try:
            released = nbformat.read(str(path), as_version=4)
        except (OSError, ValueError):
            return []
        return [i for i in (_grade_id(cell) for cell in released.cells) if i is not None]

    @staticmethod
    def _insert_at(nb, order: list[str], grade_id: str) -> int:
        """After the submission's last cell that comes before ``grade_id`` in the release."""
        rank = _rank(order, grade_id)
        at = 0
        for index, cell in enumerate(nb.cells):
            other = _grade_id(cell)
            if other is not None and _rank(order, other) < rank:
                at = index + 1
        return at


def _grade_id(cell) -> str | None:
    meta = cell.metadata.get("nbgrader", {})
    if utils.is_grade(cell) or utils.is_solution(cell) or utils.is_locked(cell) or meta.get("task"):
        return meta.get("grade_id")
    return None


def _rank(order: list[str], grade_id: str) -> int:
    return order.index(grade_id) if grade_id in order else len(order)
