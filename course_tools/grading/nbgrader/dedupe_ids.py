"""nbgrader's DeduplicateIds, where a cell flagged as graded, solution or locked but without a
``grade_id`` loses its flags instead of stopping autograde.

nbgrader's step reads ``cell.metadata.nbgrader['grade_id']`` from every flagged cell. A student who
deletes that key (by hand, or with an editor that rewrites metadata) made autograde stop there with
a KeyError, before any cell was restored, and the submission became a grading error. nbgrader's own
answer to a cell whose id it cannot trust (a duplicate) is to clear its flags; a missing id gets the
same answer here. RestoreGradedCells, which runs next, then puts back from the release every graded
cell the submission no longer has by id, so the grade never rests on the student's metadata.
"""
from __future__ import annotations

from nbgrader import utils
from nbgrader.preprocessors import DeduplicateIds


class DeduplicateIdsSafely(DeduplicateIds):
    def preprocess_cell(self, cell, resources, cell_index):
        flagged = utils.is_grade(cell) or utils.is_solution(cell) or utils.is_locked(cell)
        if flagged and not isinstance(cell.metadata.nbgrader.get("grade_id"), str):
            self.log.warning("cell %d is marked for nbgrader but has no grade_id: treated as a plain cell",
                             cell_index)
            cell.metadata.nbgrader = {}
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)
