"""Hidden-suite results stored by what was graded, so grading can happen before nbgrader asks.

`course grade --workers N` (or a Dask cluster) runs the hidden suites of a whole class in
parallel first; `nbgrader autograde` then asks HiddenSuiteGrader for each notebook, which finds
the result here instead of grading again. A result is filed under a key made of everything
the outcome depends on:

    the assignment, the program the worker runs (session.program_cells: the submission's code
    cells with locked cells taken from the release), the release notebook (the release version
    graded against, with its label and the policy: route.result_key), and the grading bundle
    (autograder/, course_lib/, course_tools/)

so a result is only ever reused for exactly the code it graded, under exactly the same hidden
suites: change a test, the reference library or the grader, and every key changes. A notebook
whose key is not in the store is graded on the spot, as before.

    <course>/.hidden_suite_results/<assignment>/<key>.json
    <course>/.hidden_suite_results/<assignment>/grading-errors.json   (student -> why; not scores)
    <course>/.hidden_suite_results/<assignment>/students/<student>      (the key last graded for them)

The last file lets `course report` find the result a student was graded with even after the
bundle changed (a changed bundle changes every key, so the current key would find nothing).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path

import nbformat

from ..build import release_notebook
from ..paths import ROOT
from .release import read_release
from .session.session import StudentError, program_cells, read_notebook

# The name the blank release's grading is filed under beside the students' (`course grade` grades
# it with the class; the report compares every student with it).
BLANK_RELEASE = "(the blank release)"
STORE_NAME = ".hidden_suite_results"
_BUNDLE_PARTS = ("autograder", "course_lib", "course_tools")


@functools.lru_cache(maxsize=None)
def bundle_fingerprint(root: Path = ROOT) -> str:
    """A hash of the grading bundle's sources: two machines grade alike only if these match."""
    digest = hashlib.sha256()
    for part in _BUNDLE_PARTS:
        for path in sorted((root / part).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def grading_key(assignment: str, submitted: nbformat.NotebookNode, release_path: Path | None = None,
                extra: dict | None = None) -> str:
    """The key of a submitted notebook (see the module docstring); ``extra``: what else the result
    depends on (the release version graded against, route.result_key)."""
    release_path = release_path or release_notebook(assignment)
    release = read_release(release_path)
    program = program_cells(submitted, release)
    payload = {"assignment": assignment, "program": program, "bundle": bundle_fingerprint(),
               "release": hashlib.sha256(release_path.read_bytes()).hexdigest()}
    if extra:
        payload["extra"] = extra
    payload = json.dumps(payload, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def key_of_file(assignment: str, notebook: Path, release_path: Path | None = None,
                extra: dict | None = None) -> str | None:
    """The key of the notebook at ``notebook``; None when it is not a readable notebook (such a file
    is graded on the spot, where its problem becomes the student's feedback)."""
    try:
        return grading_key(assignment, read_notebook(Path(notebook)), release_path, extra)
    except StudentError:
        return None


def _safe(name: str) -> str:
    """A student id as a file name (nbgrader ids are already plain; this only guards the path)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name).lstrip(".") or "_"


class ResultStore:
    """Results on disk, one JSON file per key; writes are atomic (rename), so parallel graders
    and a reader never see half a file."""

    def __init__(self, course_root: Path):
        self.folder = Path(course_root) / STORE_NAME

    def path(self, assignment: str, key: str) -> Path:
        return self.folder / assignment / f"{key}.json"

    def get(self, assignment: str, key: str | None) -> dict | None:
        if key is None:
            return None
        path = self.path(assignment, key)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def put(self, assignment: str, key: str, result: dict) -> None:
        path = self.path(assignment, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".writing-")
        with os.fdopen(handle, "w") as out:
            json.dump(result, out)
        os.replace(scratch, path)

    # Grading errors are kept apart from results: a record for the instructor (course report),
    # never something HiddenSuiteGrader could mistake for a result.
    def errors_path(self, assignment: str) -> Path:
        return self.folder / assignment / "grading-errors.json"

    def grading_errors(self, assignment: str) -> dict[str, dict]:
        try:
            return json.loads(self.errors_path(assignment).read_text())
        except (OSError, ValueError):
            return {}

    def set_grading_errors(self, assignment: str, errors: dict[str, str], graded: list[str]) -> None:
        """Record this run's grading errors and forget those of students graded now."""
        import datetime

        known = {s: e for s, e in self.grading_errors(assignment).items() if s not in graded}
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        known.update({student: {"error": why, "when": now} for student, why in errors.items()})
        path = self.errors_path(assignment)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".writing-")
        with os.fdopen(handle, "w") as out:
            json.dump(known, out, indent=1)
        os.replace(scratch, path)

    def remember(self, assignment: str, student: str, key: str) -> None:
        """Note that ``student`` was graded with the result filed under ``key``."""
        folder = self.folder / assignment / "students"
        folder.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=folder, prefix=".writing-")
        with os.fdopen(handle, "w") as out:
            out.write(key)
        os.replace(scratch, folder / _safe(student))

    def key_of_student(self, assignment: str, student: str) -> str | None:
        try:
            return (self.folder / assignment / "students" / _safe(student)).read_text().strip() or None
        except OSError:
            return None

    def clear(self, assignment: str) -> int:
        """Forget every stored result of ``assignment``; returns how many there were."""
        folder = self.folder / assignment
        files = list(folder.glob("*.json")) if folder.is_dir() else []
        for path in files:
            path.unlink()
        return len(files)
