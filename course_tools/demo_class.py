"""A simulated class, run through the whole course workflow by `make demo` / `course demo`
(cli/demo.py, which drives the instructor's commands):

    instructor: build, init a course folder, release (with a due date)
    students:   fetch, do the work (as the personas below), submit; one submits after the deadline
    instructor: collect, grade (hidden suites in parallel), feedback, export, status
    students:   fetch their feedback

The personas' notebooks are made from the course's own files: the release with its solution
cells filled in from source/ (a complete, correct submission), with edits for realistic
mistakes, or with a hostile cell appended. The end-to-end test and the grading benchmark use
the same notebooks.
"""
from __future__ import annotations

import contextlib
import copy
import os
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .build import release_notebook
from .course_dir import ROOT, check_assignment

MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")

# Realistic mistakes, as (cell grade id -> [(old, new)]) edits on the filled-in release.
MISTAKES = {
    "01_forward_ops": {"forward_transpose_code": [  # reverses every axis, like NumPy's .T
        ("return a.permute(self._permutation(a.ndim))", "return a.permute(tuple(reversed(range(a.ndim))))")]},
    "04_conv_backward": {"conv_backward_code": [  # forgets to rotate the kernel by 180 degrees
        ("b_rot = transpose(flip(b, (0, 1)), (2, 3))", "b_rot = transpose(b, (2, 3))")]},
}
# Which tasks each mistake must cost (what the hidden suites are calibrated to catch).
MISTAKE_BREAKS = {"01_forward_ops": {"forward_transpose"}, "04_conv_backward": {"conv_backward"}}

# A hostile student: tries to read the hidden tests and the gradebook, silences NumPy's
# comparisons, and hands in a sabotaged negate (so the assignment's first task must lose points
# while everything else keeps them; on assignments without Negate the patch changes nothing).
HOSTILE_CELL = '''import glob, os, numpy as np
for pattern in ("{root}/autograder/*/*.py", "{root}/solutions/*/*.ipynb", "{root}/source/*/*.ipynb"):
    for path in glob.glob(pattern)[:3]:
        try:
            print("LEAKED", path, open(path, errors="replace").read()[:2000])
        except OSError as err:
            print("blocked:", path, err)
np.allclose = lambda *args, **kwargs: True
np.testing.assert_allclose = lambda *args, **kwargs: None
from course_lib import ops
from course_lib.student import implements
@implements(ops.Negate, "compute")
def compute(self, a):
    return a
'''


def _strip_markers(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip() not in MARKERS)


def filled_release(assignment: str) -> nbformat.NotebookNode:
    """The student release with every solution cell answered as source/ answers it."""
    check_assignment(assignment)
    release = nbformat.read(str(release_notebook(assignment)), as_version=4)
    source = nbformat.read(str(ROOT / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
    return answered(release, source)


def answered(release: nbformat.NotebookNode, answers: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``release`` with each solution cell answered as in ``answers`` (a source or solution notebook,
    by grade id), what a student who fetched that release and solved it hands in."""
    answers = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in answers.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in answers:
            cell.source = _strip_markers(answers[meta["grade_id"]].source)
    return release


def apply_edits(nb: nbformat.NotebookNode, edits: dict) -> nbformat.NotebookNode:
    """A copy of ``nb`` with {grade_id: [(old, new), ...]} replaced in those cells; each ``old``
    must occur exactly once (an edit that no longer matches its solution is an error, not a no-op)."""
    nb = copy.deepcopy(nb)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    for grade_id, replacements in edits.items():
        for old, new in replacements:
            if cells[grade_id].source.count(old) != 1:
                raise ValueError(f"{grade_id}: {old!r} must occur exactly once in the cell")
            cells[grade_id].source = cells[grade_id].source.replace(old, new)
    return nb


def with_mistake(assignment: str) -> nbformat.NotebookNode:
    return apply_edits(filled_release(assignment), MISTAKES[assignment])


def hostile(assignment: str) -> nbformat.NotebookNode:
    nb = filled_release(assignment)
    nb.cells.append(nbformat.v4.new_code_cell(HOSTILE_CELL.replace("{root}", str(ROOT))))
    return nb


def blank(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(str(release_notebook(assignment)), as_version=4)


@dataclass
class Persona:
    student: str
    does: str
    make: callable
    late: bool = False


PERSONAS = [
    Persona("ada", "answers everything correctly", filled_release),
    Persona("ben", "hands in the blank release", blank),
    Persona("cleo", "makes a classic mistake", with_mistake),
    Persona("dan", "tries to read the hidden tests and cheat the checks", hostile),
    Persona("eve", "answers correctly, after the deadline", filled_release, late=True),
]


# ---------------------------------------------------------------------------------- the run
@dataclass
class DemoClass:
    """Folders of one simulated class: the course, the exchange, and each student's home."""
    base: Path
    assignment: str
    personas: list = field(default_factory=lambda: list(PERSONAS))

    @property
    def course_dir(self) -> Path:
        return self.base / "course"

    @property
    def exchange(self) -> Path:
        return self.base / "exchange"

    def home(self, student: str) -> Path:
        path = self.base / "students" / student
        path.mkdir(parents=True, exist_ok=True)
        return path

    def student_args(self, student: str) -> dict:
        return dict(course_id="demo", exchange=self.exchange, student=student)

    @contextlib.contextmanager
    def account(self, student: str):
        """Run as if logged in as ``student``: nbgrader keeps each account's submissions in a
        cache under $HOME, and finds feedback through it, so simulated students need their
        own homes (on a JupyterHub every student has one)."""
        saved = os.environ.get("HOME")
        os.environ["HOME"] = str(self.home(student))
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = saved

    def fetch(self, student: str, feedback: bool = False) -> int:
        from course_student import commands

        with self.account(student):
            return commands.fetch(self.assignment, feedback, self.home(student), **self.student_args(student))

    def submit(self, persona: "Persona") -> int:
        from course_student import commands

        self.do_work(persona)
        with self.account(persona.student):
            return commands.submit(self.assignment, self.home(persona.student), **self.student_args(persona.student))

    def do_work(self, persona: Persona) -> None:
        """Overwrite the fetched notebook with the persona's work."""
        path = self.home(persona.student) / self.assignment / f"{self.assignment}.ipynb"
        nbformat.write(persona.make(self.assignment), str(path))
