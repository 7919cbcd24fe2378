"""The grader trusts nothing the submission says, and a failure of the grader is never a score.

- The channel from the worker: bounded in size and time, refuses anything that is not a frame.
- No self-report counts: a notebook that replaces the worker's scenarios to claim "in the graph",
  "compact" or "flagged" gains nothing; planted bugs arrive anonymous and shuffled.
- Time: each task has its own budget; a slow task loses its remaining checks, the others are graded.
- Grading errors (a suite that cannot run, the grader's own exception, a skipped check, a task
  without checks, no sandbox) are reported and never stored, injected here one by one.
"""
from __future__ import annotations

import os
import shutil
import struct
import threading
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

from course_tools.grading.session.channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout
from course_tools.grading.launch.fanout import Job, grade_jobs
from course_tools.grading.results import ResultStore
from course_tools.grading.launch.runner import grade_in_process
from course_tools.grading.settings import GradingSettings
from course_tools.grading.suite.run import feedback_text
from course_tools.grading.sandbox.worker import protocol
from grading_support import ROOT, grade, inject, require_sandbox, scores, source

require_sandbox()


# ------------------------------------------------------------------------------ the channel
def _pipe_channel():
    read_fd, write_fd = os.pipe()
    reply_read, reply_write = os.pipe()
    return Channel(read_fd, reply_write), write_fd, reply_read


def test_a_frame_larger_than_the_limit_is_refused_at_once():
    channel, writer, _ = _pipe_channel()
    os.write(writer, struct.pack(">Q", protocol.MAX_FRAME_BYTES + 1))
    with pytest.raises(ChannelGarbage, match="more than the limit"):
        channel.receive(time.monotonic() + 5)


def test_a_frame_that_never_ends_times_out_on_the_grader_clock():
    channel, writer, _ = _pipe_channel()
    os.write(writer, struct.pack(">Q", 1000) + b"x" * 10)  # announces 1000 bytes, sends 10, then nothing
    start = time.monotonic()
    with pytest.raises(ChannelTimeout):
        channel.receive(start + 1.5)
    assert time.monotonic() - start < 3


def test_garbage_and_closed_pipes_are_named():
    channel, writer, _ = _pipe_channel()
    body = struct.pack(">I", 5) + b"{not "
    os.write(writer, struct.pack(">Q", len(body)) + body)
    with pytest.raises(ChannelGarbage, match="not valid JSON"):
        channel.receive(time.monotonic() + 5)
    os.close(writer)
    with pytest.raises(ChannelClosed):
        channel.receive(time.monotonic() + 5)


def test_a_frame_arriving_in_pieces_decodes_and_arrays_keep_dtype_and_shape():
    channel, writer, _ = _pipe_channel()
    value = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "n": float("nan"), "t": (1, "x")}
    frame = protocol.encode(value)

    def trickle():
        for i in range(0, len(frame), 7):
            os.write(writer, frame[i:i + 7])
            time.sleep(0.001)

    thread = threading.Thread(target=trickle)
    thread.start()
    got = channel.receive(time.monotonic() + 10)
    thread.join()
    assert got["a"].dtype == np.float32 and np.array_equal(got["a"], value["a"])
    assert np.isnan(got["n"]) and got["t"] == (1, "x")


@pytest.mark.parametrize("bad", [np.array([object()]), np.array(["text"]), {1: 2}, {1, 2}, lambda: 0])
def test_values_that_cannot_cross_are_refused_with_their_type(bad):
    with pytest.raises(protocol.ValueRefused):
        protocol.encode({"value": bad})


def test_an_array_whose_bytes_do_not_match_its_declaration_is_refused():
    frame = protocol.encode({"a": np.zeros(4)})
    body = bytearray(frame[8:])
    body = body.replace(b'"shape": [4]', b'"shape": [5]')
    with pytest.raises(protocol.ValueRefused, match="holds"):
        protocol.decode(bytes(body))


# ------------------------------------------------------------------------------ no self-report counts
CLAIM_IN_GRAPH = """\
import grading_worker.scenarios as sc
from course_lib.student import implements
from course_lib import ops, Tensor
@implements(ops.Negate, "gradient")
def gradient(self, out_grad, node):
    return Tensor(-out_grad.numpy(), requires_grad=False)   # right values, outside the graph
original = sc.gradient
def claims(ns, op, attrs, arrays, out_grad, **options):
    if op == "Negate" and options.get("reevaluate") is not None:
        return [True] * len(arrays)            # "connected": the old protocol believed this
    return original(ns, op, attrs, arrays, out_grad, **options)
sc.SCENARIOS["gradient"] = claims
"""


def test_a_notebook_that_claims_its_gradient_is_in_the_graph_is_not_believed(tmp_path):
    result = grade("02_backward_ops", inject(source("02_backward_ops"), CLAIM_IN_GRAPH), tmp_path)
    got = scores(result)
    assert got["backward_negate"][0] < got["backward_negate"][1]
    assert "cannot be graded" in feedback_text("backward_negate", result["tasks"]["backward_negate"])
    assert all(s == p for t, (s, p) in got.items() if t != "backward_negate")


CLAIM_COMPACT = """\
import grading_worker.scenarios as sc
from course_lib.student import implements
from course_lib import nd
@implements(nd.NDArray, "flip")
def flip(self, axes):   # a view with negative strides, never compacted
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    strides, offset = list(self.strides), self.offset
    for ax in axes:
        offset += (self.shape[ax] - 1) * self.strides[ax]
        strides[ax] = -self.strides[ax]
    return nd.NDArray.make(self.shape, strides=strides, handle=self.handle, offset=offset, device=self.device)
original = sc.ndarray_steps
def claims(ns, array, steps):
    out = original(ns, array, steps)
    out["compact"] = True                       # the old protocol believed this
    return out
sc.SCENARIOS["ndarray_steps"] = claims
"""


def test_a_notebook_that_claims_a_view_is_compact_is_not_believed(tmp_path):
    result = grade("03_ndarray", inject(source("03_ndarray"), CLAIM_COMPACT), tmp_path)
    got = scores(result)
    assert got["ndarray_flip"][0] < got["ndarray_flip"][1], feedback_text("ndarray_flip", result["tasks"]["ndarray_flip"])
    assert "compact" in feedback_text("ndarray_flip", result["tasks"]["ndarray_flip"])


ALWAYS_FLAG = """\
import grading_worker.scenarios as sc
def flag_everything(ns, check, implementations, args=None, seconds_each=20):
    names = [getattr(i, "__name__", repr(i)) for i in implementations]   # a GraderCall says nothing
    return ["flagged: AssertionError: " + n for n in names]
sc.SCENARIOS["check_flags"] = flag_everything
"""
RAISE_ALWAYS = """\
def check_conv_backward(backward_fn):
    raise AssertionError("everything is wrong")
def check_pool_backward(backward_fn):
    raise AssertionError("everything is wrong")
def check_finite(name, array):
    raise AssertionError("everything is wrong")
"""


@pytest.mark.parametrize("code", [ALWAYS_FLAG, RAISE_ALWAYS], ids=["replaced-scenario", "checks-that-always-raise"])
def test_flagging_everything_earns_nothing(code, tmp_path):
    result = grade("06_gradient_checking", inject(source("06_gradient_checking"), code), tmp_path)
    assert scores(result)["planted_bug_checks"][0] == 0, feedback_text("planted_bug_checks",
                                                                       result["tasks"]["planted_bug_checks"])


SPY = """\
import gc, grading_worker.main as worker
seen = []
original = worker.GraderCall.__call__
def spy(self, *args, **kwargs):
    seen.append([repr(self), sorted(dir(self)), str(getattr(self, "__dict__", None))])
    return original(self, *args, **kwargs)
worker.GraderCall.__call__ = spy
"""


def test_planted_bugs_reach_the_student_anonymous(tmp_path):
    """What a check can learn about a planted bug from the object it receives: nothing."""
    from course_tools.grading.session.session import StudentSession

    path = tmp_path / "06.ipynb"
    nbformat.write(inject(source("06_gradient_checking"), SPY), str(path))
    from course_tools.grading.assignment_folder import assignment_module
    planted_bugs = assignment_module("06_gradient_checking", "planted_bugs")

    with StudentSession("06_gradient_checking", path) as session:
        bug = session.grader_function(planted_bugs.conv_kernel_not_flipped)
        session.check_flags("student:check_conv_backward", [bug])
        seen = str(session.variable("seen"))
    assert "grader" in seen
    for word in ("flip", "kernel", "bug", "conv_", "partial", "planted"):
        assert word not in seen, word


# ------------------------------------------------------------------------------ time budgets
SLOW_NEGATE = """\
import time
from course_lib.student import implements
from course_lib import ops
@implements(ops.Negate, "compute")
def compute(self, a):
    time.sleep(1.5)
    return -a
"""


def test_a_slow_task_runs_out_of_its_own_time_and_the_others_are_graded(tmp_path):
    # Budgets count CPU time; code that sleeps is charged its wall time over the wall factor
    # (4 by default: 0.75 s per 3 s check), so a 1 s budget runs out after the first checks.
    start = time.monotonic()
    result = grade("01_forward_ops", inject(source("01_forward_ops"), SLOW_NEGATE), tmp_path,
                   task_seconds=1, call_timeout=10)
    assert time.monotonic() - start < 60
    got = scores(result)
    negate = result["tasks"]["forward_negate"]
    assert negate["out_of_time"] and 0 < got["forward_negate"][0] < got["forward_negate"][1]
    assert "ran out of its time budget" in feedback_text("forward_negate", negate)
    assert all(s == p for t, (s, p) in got.items() if t != "forward_negate")


# ------------------------------------------------------------------------------ grading errors
def _suite_copy(tmp_path, assignment="01_forward_ops") -> Path:
    suite = tmp_path / "suite"
    shutil.copytree(ROOT / "autograder" / assignment, suite, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "autograder" / "conftest.py", suite / "conftest.py")
    return suite


def _solution(tmp_path, assignment="01_forward_ops") -> Path:
    path = tmp_path / f"{assignment}.ipynb"
    nbformat.write(source(assignment), str(path))
    return path


@pytest.mark.parametrize("fault,expected", [
    ("def test_broken(:\n", "could not run"),
    ("import a_module_that_does_not_exist\n", "could not run"),
    ("from course_tools.grading.suite.run import task\n@task('forward_negate')\ndef test_grader_bug(student):\n"
     "    '''a check whose own code fails'''\n    {}['missing']\n", "KeyError"),
    ("import pytest\nfrom course_tools.grading.suite.run import task\n@task('forward_negate')\n"
     "def test_skips(student):\n    '''a check that skips'''\n    pytest.skip('not today')\n", "skipped"),
], ids=["syntax-error", "missing-import", "grader-exception", "skipped-check"])
def test_a_broken_hidden_suite_is_a_grading_error(fault, expected, tmp_path):
    suite = _suite_copy(tmp_path)
    (suite / "test_zz_fault.py").write_text(fault)
    result = grade_in_process("01_forward_ops", _solution(tmp_path), GradingSettings.current(), suite_dir=suite)  # a fresh process, as in production
    assert result["tasks"] == {} and expected in result["grading_error"], result["grading_error"]


def test_a_graded_task_without_hidden_checks_is_a_grading_error(tmp_path):
    suite = _suite_copy(tmp_path)
    text = (suite / "test_forward_ops.py").read_text()
    (suite / "test_forward_ops.py").write_text(text.replace('"forward_negate"', '"forward_exp"').replace(
        "'forward_negate'", "'forward_exp'"))
    result = grade_in_process("01_forward_ops", _solution(tmp_path), GradingSettings.current(), suite_dir=suite)
    assert "no checks for the graded task forward_negate" in (result["grading_error"] or "")


def test_a_grader_without_pytorch_stores_nothing(tmp_path, monkeypatch):
    """The hidden suites need PyTorch: on a grading machine without it, no notebook gets a score."""
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError('PyTorch is not installed here')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake))
    path = _solution(tmp_path, "04_conv_backward")  # its hidden suite compares with PyTorch
    result = grade_in_process("04_conv_backward", path, GradingSettings.current())
    assert result["tasks"] == {} and ("could not run" in result["grading_error"]
                                      or "PyTorch is not installed here" in result["grading_error"])


def test_a_grading_error_in_a_class_stores_nothing(tmp_path, monkeypatch):
    """`course grade`'s fan-out: the sandbox cannot start, so no notebook gets a stored result."""
    monkeypatch.setenv("COURSE_GRADER_NO_BWRAP", "1")
    monkeypatch.delenv("COURSE_GRADER_UNSANDBOXED", raising=False)
    path = _solution(tmp_path, "01_forward_ops")
    store = ResultStore(tmp_path / "course")
    report = grade_jobs([Job("alice", "01_forward_ops", path)], store, GradingSettings.current(), progress=False)
    assert report.graded == 0 and [job.student for job, _ in report.failed] == ["alice"]
    assert not store.folder.exists() or not list(store.folder.rglob("*.json"))
