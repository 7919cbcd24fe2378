"""Fixtures of every hidden suite: ``student`` (the worker running the submission), ``rng``, and
the lending of the other tasks' reference (each assignment's ``lends.py``, beside its tests)."""
import zlib
from pathlib import Path

import numpy as np
import pytest

from course_tools.grading.api import assignment_module, current_session


@pytest.fixture(scope="session")
def student():
    return current_session()


@pytest.fixture
def rng(request):
    """A generator seeded by the test's id: every submission gets the same inputs."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def _lent_to(folder: Path):
    """The ``lent_to(student, task) -> dict`` of the assignment whose tests live in ``folder``
    (its ``lends.py``), or None where the assignment lends nothing (no such file)."""
    module = assignment_module(folder.name, "lends", folder)
    return module.lent_to if module else None


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
