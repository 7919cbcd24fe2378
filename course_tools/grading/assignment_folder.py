"""One folder per assignment, ``autograder/<id>/``: everything the grader knows about it.

    test_*.py           its hidden suite (pytest; autograder/conftest.py gives it its fixtures)
    lends.py            what its checks lend in place of the other tasks of the notebook, if any
    misconceptions.py   its named mistakes and `course check`'s probes (diagnosis.py, probes.py)
    planted_bugs.py     data of its own a suite reads (06: the planted bugs), where there is any

None of it reaches a student: the student install ships no autograder/ (student_package.py), and
the grading worker's sandbox cannot read it (runtime.py). Its modules are loaded by path, since
an assignment id (``04_conv_backward``) is no Python module name; each is loaded once per process.
"""
from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path
from types import ModuleType

from ..paths import SUITES


def assignment_module(assignment: str, name: str, folder: Path | None = None) -> ModuleType | None:
    """The module ``<folder>/<name>.py`` of one assignment (``folder``: autograder/<assignment>
    unless given, e.g. a copy of the suite), or None where the assignment has no such file."""
    path = ((folder or SUITES / assignment) / f"{name}.py").resolve()
    # Keyed by the path too: a test may load a copy of a suite beside the real one.
    key = f"course_suites.{assignment}.{name}_{zlib.crc32(str(path).encode()):08x}"
    if key in sys.modules:
        return sys.modules[key]
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module   # before running it: a dataclass in it looks its module up
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    return module
