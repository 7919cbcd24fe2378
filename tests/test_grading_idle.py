"""A notebook that sleeps, or stops itself with SIGSTOP, is charged for that time as CPU time
(session.py): it holds a grading for about its CPU budget, not the wall factor times it (a
self-stopping notebook held a service's worker for 177 s). Real sandbox, short budgets."""
from __future__ import annotations

import time

import nbformat
import pytest

from course_tools.demo_class import filled_release
from course_tools.grading.route import grade_one
from course_tools.grading.settings import GradingSettings
from grading_support import require_sandbox

require_sandbox()
A = "01_forward_ops"
LOAD_SECONDS = 15
IDLE = {
    "sleeps": "import time\ntime.sleep(3600)",
    "stops_itself": "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)",
}


@pytest.mark.parametrize("kind", IDLE, ids=list(IDLE))
def test_a_notebook_that_sleeps_or_stops_itself_is_charged_its_idle_time(tmp_path, kind):
    nb = filled_release(A)
    nb.cells.insert(1, nbformat.v4.new_code_cell(IDLE[kind]))
    path = tmp_path / f"{A}.ipynb"
    nbformat.write(nb, str(path))
    settings = GradingSettings.current()
    settings = GradingSettings(load_seconds=LOAD_SECONDS, limits=settings.limits, machine=settings.machine)
    start = time.monotonic()
    result = grade_one(A, path, settings)
    seconds = time.monotonic() - start
    print(f"{kind}: graded in {seconds:.1f} s with a {LOAD_SECONDS} s budget for its cells "
          f"(the wall backstop alone: {LOAD_SECONDS * settings.limits.wall_factor:g} s)")
    assert not result.get("grading_error") and result["tasks"]
    assert all(task["score"] == 0 for task in result["tasks"].values())      # its cells never finished
    messages = {c["message"] for task in result["tasks"].values() for c in task["checks"]}
    assert any("running out of time while running the notebook's code cells" in m for m in messages), messages
    # Its cells' budget plus the grading's own start and end (10-30 s here), where the wall
    # backstop alone let its cells hold the grading for the wall factor times their budget.
    assert seconds < LOAD_SECONDS * settings.limits.wall_factor, seconds
