"""The student's own mistakes that keep a submission from being graded, found before grading.

Such a submission is the student's error, never the grader's: its page says what is wrong and
what to do, it uses no graded attempt, it is not retried, and nobody on the staff is told
(`course status` counts it with the finished rows; the queue keeps the reason). Found, in order:

    missing      no notebook under the release's name: "expected 03_ndarray.ipynb; found
                 my_work.ipynb" (two notebooks under other names, or none, alike)
    unreadable   the notebook is not a notebook: not JSON, not nbformat (what nbformat says), or
                 has cell metadata nbgrader never writes (session.read_notebook, notebook_metadata.py)
    elsewhere    its cells are another assignment's tasks (the task ids of course_lib.tasks)
    no release   its locked cells match no release version the course recorded
                 (release_versions.NoMatchingRelease: a notebook from elsewhere, locked cells edited)

A condition the student cannot fix (a damaged stored version, cells that fit two versions alike)
is not one: it goes to grading, which reports it as a grading error.
"""
from __future__ import annotations

from pathlib import Path

from course_lib import tasks

from .. import release_versions
from ..grading.session.session import StudentError, read_notebook
from ..terminal import printable

MAX_NAMES = 8   # names of found notebooks a page lists


def found_notebooks(folder: Path) -> list[str]:
    """The ids (file stems) of the notebooks a submission holds, top level only, sorted."""
    try:
        return sorted(p.stem for p in folder.iterdir() if p.suffix == ".ipynb" and p.is_file() and not p.is_symlink())
    except OSError:
        return []


def _names(stems: list[str]) -> str:
    shown = ", ".join(printable(f"{stem}.ipynb") for stem in stems[:MAX_NAMES])
    return shown + (f" and {len(stems) - MAX_NAMES} more" if len(stems) > MAX_NAMES else "")


NO_ATTEMPT = "This submission used none of your graded attempts."


def mistake(assignment: str, folder: Path, notebooks: list[str], course_root: Path | None) -> str | None:
    """What is wrong with the submission, then NO_ATTEMPT; None when it can be graded (``_mistake``)."""
    why = _mistake(assignment, folder, notebooks, course_root)
    return None if why is None else f"{why.rstrip('. ')}. {NO_ATTEMPT}"


def _mistake(assignment: str, folder: Path, notebooks: list[str], course_root: Path | None) -> str | None:
    """What is wrong with the submission in ``folder`` (the service's copy) that the student must
    fix, in the student's terms; None when it can be graded. ``notebooks``: the release's notebook
    ids; ``course_root``: the course folder whose recorded release versions it must match."""
    found = found_notebooks(folder)
    missing = [nb for nb in notebooks if nb not in found]
    if missing:
        what = f"found {_names(found)}" if found else "found no notebook at all"
        return (f"Your submission has no {_names(missing)}: {what}. Submit your work in the notebook you fetched, "
                f"under its name {_names(notebooks)}, and submit again")
    for nb in notebooks:
        path = folder / f"{nb}.ipynb"
        try:
            submitted = read_notebook(path)
        except StudentError as err:
            return printable(err)
        other = _another_assignment(assignment, submitted)
        if other is not None:
            return (f"{path.name} holds the work of {other}, not of {assignment}: its graded cells are {other}'s "
                    f"tasks. Submit it as {other}, and submit your {assignment} notebook here.")
        if course_root is not None:
            why = _no_release(assignment, path.name, submitted, Path(course_root))
            if why is not None:
                return f"{printable(why)}. Fetch {assignment} again into a fresh folder and copy your work into it."
    return None


def _another_assignment(assignment: str, nb) -> str | None:
    """The other assignment whose tasks ``nb``'s cells are, when none of them is ``assignment``'s."""
    owners = set()
    for cell in nb.get("cells", []):
        grade_id = (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("grade_id")
        if isinstance(grade_id, str):
            try:
                owners.add(tasks.assignment_of(grade_id))
            except KeyError:
                continue
    if owners and assignment not in owners:
        return min(owners)
    return None


def _no_release(assignment: str, name: str, nb, course_root: Path) -> str | None:
    try:
        stored = release_versions.versions(course_root, assignment)
        if stored:
            release_versions.match(stored, name, nb)
    except release_versions.NoMatchingRelease as err:
        return str(err)
    except Exception:  # noqa: BLE001 - not the student's to fix (a damaged version, a tie): grading reports it
        return None
    return None
