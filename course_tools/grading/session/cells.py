"""The code a worker runs, read from a submission: its program cells (locked cells as the
release has them), their labels as the student finds them, and the notebook read with its
metadata checked.

    program_cells(submitted, release) -> [{"grade_id", "source", "position"}]
    cell_label(cell)                  -> "cell 46 (forward_add_code)"
    read_notebook(path)               -> the notebook, or StudentError saying what is wrong
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from ... import notebook_metadata
from ...demonstrations import is_demonstration
from .errors import StudentError


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def program_cells(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode) -> list[dict]:
    """The code the worker runs: the submission's code cells in order, with test cells left out,
    the release's demonstration cells left out (demonstrations.py) and locked cells replaced by
    the release's own text (a student cannot retype them)."""
    canonical = {_meta(c)["grade_id"]: c for c in release.cells if _meta(c).get("grade_id")}
    tests = {gid for gid, c in canonical.items() if _meta(c).get("grade") and not _meta(c).get("solution")}
    shows = {gid for gid, c in canonical.items() if is_demonstration(c)}
    cells = []
    for index, cell in enumerate(submitted.cells):
        if cell.get("cell_type") != "code":
            continue
        meta = _meta(cell)
        grade_id = meta.get("grade_id")
        if grade_id in tests or grade_id in shows or (meta.get("grade") and not meta.get("solution")):
            continue
        # position: where the student sees the cell (1 = the notebook's first cell, as `course check` counts)
        if grade_id in canonical and _meta(canonical[grade_id]).get("locked"):
            cells.append({"grade_id": grade_id, "source": canonical[grade_id].source, "position": index + 1})
        else:
            cells.append({"grade_id": grade_id, "source": cell.get("source", ""), "position": index + 1})
    return cells


def cell_label(cell: dict) -> str:
    """A program cell named as the student finds it in their notebook: "cell 46 (forward_add_code)"."""
    grade_id = cell.get("grade_id")
    return f"cell {cell['position']}" + (f" ({grade_id})" if isinstance(grade_id, str) and grade_id else "")


def read_notebook(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook, or StudentError saying what is wrong with the file."""
    if not path.exists():
        raise StudentError(f"no notebook at {path.name}: was it renamed or deleted?")
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as err:  # noqa: BLE001 - any parse failure is the file's fault
        raise StudentError(f"{path.name} is not a readable notebook ({type(err).__name__}: {str(err)[:200]})") from None
    wrong = notebook_metadata.problems(nb)
    if wrong:   # every reader of a submission relies on these types (notebook_metadata.py)
        raise StudentError(f"{path.name} has cell metadata that nbgrader never writes: {'; '.join(wrong[:3])}"
                           f"{' and more' if len(wrong) > 3 else ''}. Restore those cells from the release "
                           f"(or undo the edit of their metadata) and submit again.")
    return nb
