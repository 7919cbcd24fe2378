"""The copy of course_lib that ships with the release of one assignment.

Students of assignment k get the reference code of the assignments before k, stubs that raise
NotImplementedError naming the task for k's own tasks, and for later tasks their fallback
(a black-box version through NumPy/CuPy, see regions.py) or else a stub.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from course_lib import tasks

from .regions import strip_regions

LIBRARY = Path(__file__).resolve().parents[1] / "course_lib"


def banner(relative: str, assignment: str) -> str:
    return (f"# Generated from course_lib/{relative} for the release of {assignment} by "
            f"`python -m course_tools.build` - do not edit.\n")


def build_student_lib(assignment: str, dest: Path) -> list[Path]:
    """Write the student-facing course_lib for ``assignment`` into ``dest``; returns the files."""
    released = tasks.tasks_released_with(assignment)
    strip = {t for ts in tasks.LIBRARY_TASKS.values() for t in ts} - released
    order = list(tasks.ASSIGNMENTS)
    later = {t for a in order[order.index(assignment) + 1:] for t in tasks.LIBRARY_TASKS[a]}
    if dest.exists():
        shutil.rmtree(dest)
    written = []
    for path in sorted(LIBRARY.rglob("*")):
        if "__pycache__" in path.parts or path.is_dir() or path.suffix == ".pyc":
            continue
        relative = path.relative_to(LIBRARY).as_posix()
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            text = strip_regions(path.read_text(), strip, tasks.assignment_of, where=f"course_lib/{relative}",
                                 use_fallback=later)
            target.write_text(banner(relative, assignment) + text)
        else:
            shutil.copyfile(path, target)
        written.append(target)
    return written
