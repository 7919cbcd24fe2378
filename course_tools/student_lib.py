"""The copies of course_lib that students get.

The release of assignment k ships one beside its notebook: the reference code of the
assignments before k, stubs that raise NotImplementedError naming the task for k's own tasks,
and for later tasks their fallback (a black-box version through NumPy/CuPy, see regions.py) or
else a stub. The student install (student_package.py) ships one with every solution region
stubbed: each release folder brings the code its notebook may use.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

from course_lib import tasks

from .paths import LIBRARY
from .regions import strip_regions



def banner(relative: str, assignment: str) -> str:
    return (f"# Generated from course_lib/{relative} for the release of {assignment} by "
            f"`python -m course_tools.build` - do not edit.\n")


def all_library_tasks() -> set[str]:
    return {t for ts in tasks.LIBRARY_TASKS.values() for t in ts}


def write_library(dest: Path, strip: set[str], use_fallback: set[str], banner_of: Callable[[str], str]) -> list[Path]:
    """Write course_lib into ``dest`` (replacing it) with the regions of ``strip`` replaced (see
    regions.strip_regions) and ``banner_of(relative path)`` atop each Python file; returns the files."""
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
                                 use_fallback=use_fallback)
            target.write_text(banner_of(relative) + text)
        else:
            shutil.copyfile(path, target)
        written.append(target)
    return written


def build_student_lib(assignment: str, dest: Path) -> list[Path]:
    """Write the student-facing course_lib for ``assignment`` into ``dest``; returns the files."""
    strip = all_library_tasks() - tasks.tasks_released_with(assignment)
    order = list(tasks.ASSIGNMENTS)
    later = {t for a in order[order.index(assignment) + 1:] for t in tasks.LIBRARY_TASKS[a]}
    return write_library(dest, strip, later, lambda relative: banner(relative, assignment))


def build_stubbed_lib(dest: Path) -> list[Path]:
    """Write the student install's course_lib into ``dest``: every solution region a stub naming its
    task and assignment, no fallbacks (a fallback is no answer, but the install needs none)."""
    def banner_of(relative: str) -> str:
        return (f"# Generated from course_lib/{relative} for the student install by `course student-package`, "
                f"every solution region stubbed - do not edit.\n")

    return write_library(dest, all_library_tasks(), set(), banner_of)
