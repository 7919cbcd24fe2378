"""The mutants of an assignment: its reference solution with one region changed by one operator.

    mutants_of("01_forward_ops")            -> [Mutant, ...]   every solution region of every task
    notebook_with(assignment, [m1, m2])      the source notebook with those mutants applied
    sample(mutants, per_task=3)              a fixed subset: the same one on every machine

The solution regions are those of the source notebook's ``<task>_code`` cells (nbgrader's
``### BEGIN SOLUTION`` markers). For library tasks these hold exactly the code of course_lib's
``### BEGIN SOLUTION <task>`` regions (tests/test_notebooks.py checks it), and it is the
notebook's code that grading runs: the release's course_lib has those regions stubbed. So a
mutant of the notebook's region is a mutant of the library's too.

A mutant's id is a hash of its task, the original region and the mutated one: it stays the same
while the reference code stays the same, and changes (so an equivalence listed for it must be
judged again) when the reference changes.
"""
from __future__ import annotations

import copy
import difflib
import hashlib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..build import source_notebook
from ..regions import notebook_region_spans
from .operators import Mutation, mutations

CELL_SUFFIX = "_code"


@dataclass(frozen=True)
class Mutant:
    assignment: str
    task: str          # the task whose points the mutant must cost
    cell: str          # grade_id of the cell holding the region
    region: int        # which region of the cell (0-based)
    mutation: Mutation
    original: str      # the region's reference code (dedented)

    @property
    def id(self) -> str:
        digest = hashlib.sha256("\0".join([self.task, self.original, self.mutation.code]).encode())
        return f"{self.task}-{digest.hexdigest()[:10]}"

    @property
    def summary(self) -> str:
        """One line: kind, line, and the change, e.g. ``arithmetic L2: a - b -> b - a``."""
        before = " ".join(self.mutation.before.split())
        after = " ".join(self.mutation.after.split())
        return f"{self.mutation.kind} L{self.mutation.line}: {before} -> {after}"

    def diff(self) -> str:
        """A unified diff of the region, reference -> mutant."""
        lines = difflib.unified_diff(self.original.splitlines(), self.mutation.code.splitlines(),
                                     f"{self.cell} (reference)", f"{self.cell} ({self.id})", n=2, lineterm="")
        return "\n".join(lines) + "\n"


def _splice(source: str, region: int, body: str) -> str:
    """``source`` (a cell) with the code of its ``region``-th region replaced by ``body`` (dedented)."""
    lines = source.splitlines()
    start, end, indent = notebook_region_spans(source)[region]
    indented = [indent + line if line.strip() else line for line in body.split("\n")]
    return "\n".join(lines[:start + 1] + indented + lines[end:])


def _code_cells(nb: nbformat.NotebookNode):
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type == "code" and grade_id.endswith(CELL_SUFFIX):
            yield grade_id, cell


def mutants_of(assignment: str, tasks: set[str] | None = None) -> list[Mutant]:
    """Every mutant of every solution region of ``assignment`` (or of ``tasks`` only), in notebook order."""
    from ..regions import notebook_region_bodies

    nb = nbformat.read(str(source_notebook(assignment)), as_version=4)
    found = []
    for grade_id, cell in _code_cells(nb):
        task = grade_id[: -len(CELL_SUFFIX)]
        if tasks is not None and task not in tasks:
            continue
        for index, body in enumerate(notebook_region_bodies(cell.source, f"{assignment}:{grade_id}")):
            try:
                changes = mutations(body)
            except SyntaxError as err:
                raise ValueError(f"{assignment}:{grade_id}: region {index} is not Python ({err})") from err
            found += [Mutant(assignment, task, grade_id, index, change, body) for change in changes]
    return found


def notebook_with(assignment: str, mutants: list[Mutant]) -> nbformat.NotebookNode:
    """The source notebook with ``mutants`` applied (at most one per region)."""
    nb = copy.deepcopy(nbformat.read(str(source_notebook(assignment)), as_version=4))
    cells = dict(_code_cells(nb))
    placed = set()
    for mutant in mutants:
        where = (mutant.cell, mutant.region)
        if where in placed:
            raise ValueError(f"two mutants for region {mutant.region} of {mutant.cell}")
        placed.add(where)
        cells[mutant.cell].source = _splice(cells[mutant.cell].source, mutant.region, mutant.mutation.code)
    return nb


def sample(mutants: list[Mutant], per_task: int) -> list[Mutant]:
    """``per_task`` mutants of each task, chosen by id (a hash): the same sample on every machine,
    spread over the regions' lines and operators rather than the first few of each."""
    by_task: dict[str, list[Mutant]] = {}
    for mutant in sorted(mutants, key=lambda m: m.id):
        by_task.setdefault(mutant.task, []).append(mutant)
    return [m for task in by_task.values() for m in task[:per_task]]


def write_notebook(nb: nbformat.NotebookNode, folder: Path, name: str) -> Path:
    path = Path(folder) / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return path
