"""Fixtures of every hidden suite: ``student`` (the worker running the submission), ``rng``, and
the lending of the other tasks' reference (each assignment's ``lends.py``, beside its tests)."""
import importlib.util
import zlib
from pathlib import Path

import numpy as np
import pytest

from course_tools.grading.session import current_session


@pytest.fixture(scope="session")
def student():
    return current_session()


@pytest.fixture
def rng(request):
    """A generator seeded by the test's id: every submission gets the same inputs."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


_LENDS = {}


def _lent_to(folder: Path):
    """The ``lent_to(student, task) -> dict`` of the assignment whose tests live in ``folder``
    (its ``lends.py``), or None where the assignment lends nothing (no such file)."""
    path = folder / "lends.py"
    if path not in _LENDS:
        lent_to = None
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"lends_{folder.name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            lent_to = module.lent_to
        _LENDS[path] = lent_to
    return _LENDS[path]


@pytest.fixture(autouse=True)
def lend_the_other_tasks(request, student):
    """Each task graded on its own: while a test runs, the checks of a task get the grader's
    version of the other tasks they call (what the assignment's ``lent_to`` returns for it)."""
    lent_to = _lent_to(Path(request.node.path).parent)
    if lent_to is None:
        yield
        return
    student.lend = lambda task: lent_to(student, task)
    yield
    student.lend = None
