"""The grader's own side of grading trusts nothing a submission controls (issue 21, classes 1, 2, 4).

- No reference code crosses into the worker: what a check lends runs in the grader, and values
  cross (a lent central_difference asks the worker for f's values). A submission that dumps all
  it can see of the lent functions finds none of the reference's text.
- Grader-side work on a submission's arguments is bounded in size (a view's claimed geometry,
  a callback's arguments and result), memory (the grading process's cap) and time (the request's
  deadline, the task's budget); a refusal is that check's failure with a message, never a
  grading error.
- A crash costs only its own task: a task that crashes the worker three times loses its
  remaining checks, and the next task gets a fresh worker.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from course_tools.demo_class import apply_edits
from course_tools.grading.assignment_folder import assignment_module
from course_tools.grading.diagnosis.reference import compute_substitutes
from course_tools.grading.session.session import MAX_CRASHES_PER_TASK, StudentError, StudentSession
from course_tools.grading.suite.run import feedback_text, run_suite
from fixtures.hostile_grader_side import HOSTILE_GRADER_SIDE, REFERENCE_MARKERS
from grading_support import FAST, ROOT, inject, require_sandbox, scores, source

require_sandbox()
planted_bugs = assignment_module("06_gradient_checking", "planted_bugs")


def _notebook(tmp_path, assignment, code, edits=None):
    import nbformat

    nb = source(assignment)
    if edits:
        nb = apply_edits(nb, edits)
    path = tmp_path / f"{assignment}.ipynb"
    nbformat.write(inject(nb, code), str(path))
    return path


def _feedback(result) -> str:
    return "\n".join(feedback_text(t, graded) for t, graded in result["tasks"].items())


@pytest.mark.parametrize("case", HOSTILE_GRADER_SIDE, ids=[c["name"] for c in HOSTILE_GRADER_SIDE])
def test_hostile_grader_side_submission_gets_what_it_deserves(case, tmp_path):
    path = _notebook(tmp_path, case["assignment"], case["inject"], case.get("edits"))
    options = {**FAST, **({"task_seconds": case["task_seconds"]} if "task_seconds" in case else {})}
    started = time.monotonic()
    result = run_suite(case["assignment"], path, **options)
    got = scores(result)  # never a grading error
    assert not result["fatal"] and not result["cell_errors"], (result["fatal"], result["cell_errors"])
    if case["expect"] == "full":
        assert all(s == p for s, p in got.values()), (got, _feedback(result)[:3000])
    else:
        lost = sorted(t for t, (s, p) in got.items() if s < p)
        assert lost == sorted(case["expect"]["lose"]), (got, _feedback(result)[:3000])
    feedback = _feedback(result)
    if "message" in case:
        assert case["message"] in feedback, feedback[:3000]
    everything = feedback + json.dumps(result)
    for text in case.get("feedback_must_not_contain", ()):
        assert text not in everything, everything[everything.index(text) - 300:everything.index(text) + 300]
    if "task_seconds" in case:  # the slow grader-side work was stopped at the budget, not run to its end
        assert time.monotonic() - started < 120


def test_the_reference_code_is_nowhere_the_worker_can_reach(tmp_path):
    """What the dump of a lent central_difference holds, read back in full (not only the 500
    characters an outcome keeps): the worker's stand-in and tokens, no reference text."""
    case = next(c for c in HOSTILE_GRADER_SIDE if c["name"] == "reads_the_lent_central_difference")
    path = _notebook(tmp_path, "06_gradient_checking", case["inject"], case["edits"])
    conftest = assignment_module("06_gradient_checking", "lends")
    with StudentSession("06_gradient_checking", path, **FAST) as session:
        session.begin_check("planted_bug_checks")
        session.lend = lambda task: conftest.lent_to(session, task)
        outcomes = session.check_flags("student:check_conv_backward",
                                       [session.grader_function(planted_bugs.conv_correct),
                                        session.grader_function(planted_bugs.conv_kernel_not_flipped)])
        session.lend = None
        dump = "\n".join(session.variable("dump"))
    assert outcomes[0] == "passed" and outcomes[1].startswith("flagged: AssertionError"), outcomes
    assert "calls_back" in dump and "central_difference" in dump  # it did see the stand-in
    assert len(dump) > 100_000, len(dump)
    for marker in REFERENCE_MARKERS:
        assert marker not in dump, dump[dump.index(marker) - 300:dump.index(marker) + 300]


def test_the_worker_cannot_run_lent_source_code():
    """The "source" kind of substitute is gone from the worker: nothing can lend code again."""
    from course_tools.grading.sandbox.worker import substitutes

    for name in ("scenarios.py", "substitutes.py"):
        text = (ROOT / "course_tools" / "grading" / "sandbox" / "worker" / name).read_text()
        assert "exec(" not in text and "compile(" not in text
    with pytest.raises(ValueError, match="unknown substitute kind"):
        substitutes._substitute({"kind": "source", "code": "def f(): pass", "name": "f"})


def test_scenarios_import_only_the_modules_of_their_one_allow_list(monkeypatch):
    """A request names functions as 'module:name'; only ALLOWED_MODULES (and their submodules) are
    importable that way, and that list is the one the check reads (it once hard-coded its own)."""
    from course_tools.grading.sandbox.worker import scenarios

    assert scenarios.allowed_module("course_lib.ops").__name__ == "course_lib.ops"
    for name in ("os", "course_lib_evil", "subprocess"):
        with pytest.raises(PermissionError, match="not available to scenarios"):
            scenarios.allowed_module(name)
    monkeypatch.setattr(scenarios, "ALLOWED_MODULES", ("json",))
    assert scenarios.allowed_module("json").__name__ == "json"
    with pytest.raises(PermissionError):
        scenarios.allowed_module("course_lib")


# ------------------------------------------------------------------------------ size
FORGED_VIEW = """\
import grading_worker.scenarios as sc
def forged(ns, array, steps):   # one element, stride 0, claiming 10^7 x 10^7
    return {"buffer": np.zeros(1), "shape": [10 ** 7, 10 ** 7], "strides": [0, 0], "offset": 0}
sc.SCENARIOS["ndarray_steps"] = forged
"""


def test_a_view_claiming_a_huge_shape_is_refused_before_the_grader_allocates(tmp_path):
    path = _notebook(tmp_path, "03_ndarray", FORGED_VIEW)
    with StudentSession("03_ndarray", path, **FAST) as session:
        session.begin_check("ndarray_permute")
        started = time.monotonic()
        with pytest.raises(StudentError, match=r"a view claiming shape \(10000000, 10000000\) = 1e\+14 elements "
                                               r"is larger than the 16777216 \(2\*\*24\) elements the grader reads"):
            session.ndarray_steps(np.arange(6.0).reshape(2, 3), [["permute", [1, 0]]])
        assert time.monotonic() - started < 10


def test_a_forged_view_costs_its_checks_and_is_never_a_grading_error(tmp_path):
    result = run_suite("03_ndarray", _notebook(tmp_path, "03_ndarray", FORGED_VIEW), **FAST)
    got = scores(result)
    lost = {t for t, (s, p) in got.items() if s < p}
    assert "ndarray_permute" in lost and "elements the grader reads" in _feedback(result)


def test_the_lent_slice_view_refuses_a_huge_claimed_buffer_before_allocating():
    """03's lent _slice_view gets the buffer's size from the worker: 10**12 elements is refused at once."""
    from course_tools.grading.diagnosis.reference import slice_view

    assert slice_view([4, 3], [3, 1], 0, 12, [["slice", 0, 2, 1]]) == [[2, 3], [3, 1], 0]
    started = time.monotonic()
    with pytest.raises(ValueError, match="the grader works on at most 16777216"):
        slice_view([4, 3], [3, 1], 0, 10 ** 12, [["int", 0]])
    assert time.monotonic() - started < 1


ASKS_FOR_A_HUGE_BROADCAST = """\
from course_lib import nd, ops
still_here = "yes"
def asks_for_a_huge_broadcast():
    # 2**25 + 1 float64 values: 268 MB, more than a value the grader sends (256 MB)
    return ops.BroadcastTo((2 ** 25 + 1,)).compute(nd.array(np.ones(1)))
"""


def test_a_lent_function_asked_for_a_huge_result_fails_the_check(tmp_path):
    path = _notebook(tmp_path, "01_forward_ops", ASKS_FOR_A_HUGE_BROADCAST)
    with StudentSession("01_forward_ops", path, **FAST) as session:
        session.begin_check("forward_reshape")
        with pytest.raises(StudentError, match="its result cannot be sent back"):
            session.call("student:asks_for_a_huge_broadcast", substitutes=compute_substitutes(session, "BroadcastTo"))
        assert session.variable("still_here") == "yes" and session.starts == 1  # the worker went on, in step


# ------------------------------------------------------------------------------ time
CALLS_THE_NAIVE_CONV = """\
def calls_it(backward_fn):
    # legal, and about 3 million elements: the pure-Python loops take a minute here
    a_pad = np.zeros((48, 16, 64, 64))
    return backward_fn(np.zeros((48, 16, 62, 62)), a_pad, np.zeros((16, 16, 3, 3)), 0, 1)[2]
"""


def test_a_slow_grader_side_call_stops_at_the_task_budget(tmp_path):
    from course_lib.naive import conv2d_backward

    path = _notebook(tmp_path, "06_gradient_checking", CALLS_THE_NAIVE_CONV)
    with StudentSession("06_gradient_checking", path, task_seconds=4, **FAST) as session:
        session.begin_check("planted_bug_checks")
        fn = session.grader_function(conv2d_backward)
        started = time.monotonic()
        with pytest.raises(StudentError, match="out of time"):
            session.check_flags("student:calls_it", [fn])
        took = time.monotonic() - started
    assert took < 12, took  # the pure-Python loop alone would run for minutes


# ------------------------------------------------------------------------------ memory
def test_the_grading_process_gets_a_memory_cap_generous_enough_for_torch(tmp_path):
    code = ("import resource, numpy as np, torch\n"
            "from course_tools.grading.suite.run import cap_grader_memory\n"
            "cap = cap_grader_memory()\n"
            "assert resource.getrlimit(resource.RLIMIT_DATA)[0] == cap == 3000 * 2 ** 20, cap\n"
            "torch.nn.functional.conv2d(torch.ones(4, 3, 32, 32), torch.ones(8, 3, 3, 3))\n"
            "try:\n    np.ones(4 * 2 ** 30, dtype=np.uint8)\nexcept MemoryError:\n    print('refused')\n")
    env = {**os.environ, "COURSE_GRADER_SUITE_MEMORY_MB": "3000", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "refused", done.stderr[-2000:]


# ------------------------------------------------------------------------------ crashes
CRASHING_NEGATE = """\
import os
from course_lib.student import implements
from course_lib import ops
@implements(ops.Negate, "compute")
def compute(self, a):
    os._exit(1)
"""


def test_a_task_that_crashes_three_times_loses_only_its_own_checks(tmp_path):
    result = run_suite("01_forward_ops", _notebook(tmp_path, "01_forward_ops", CRASHING_NEGATE), **FAST)
    got = scores(result)
    assert got["forward_negate"][0] == 0
    assert all(s == p for t, (s, p) in got.items() if t != "forward_negate"), got
    negate = feedback_text("forward_negate", result["tasks"]["forward_negate"])
    assert f"crashed or hung the grading process {MAX_CRASHES_PER_TASK} times" in negate, negate
    assert result["worker_starts"] == 1 + MAX_CRASHES_PER_TASK  # each crash of negate, and nothing more
