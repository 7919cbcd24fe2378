"""A worker's value of the wrong type or structure fails its own check, never the whole notebook.

- The readers (course_tools/grading/session/expect.py): what they accept, and the message for what they refuse.
- The decoder: a frame nested far deeper than any value may be is refused before it is parsed.
- suite.py: a StudentError inside a check is that check's failure; a bug in the grader's own check
  is still a grading error.
- Hostile submissions (tests/fixtures/hostile_values.py), graded for real in the sandbox: each
  costs only the task it attacks, with a message naming what was expected.
"""
from __future__ import annotations

import json
import os
import random
import struct
import textwrap
import threading
import time

import nbformat
import numpy as np
import pytest

from course_tools.build import release_notebook
from course_tools.grading.session import expect
from course_tools.grading.session.channel import Channel, ChannelGarbage
from course_tools.grading.session.session import StudentError
from course_tools.grading.suite.run import feedback_text, graded_tasks, run_suite
from course_tools.grading.sandbox.worker import protocol
from fixtures.hostile_values import HOSTILE_VALUES
from grading_support import FAST, grade, inject, require_sandbox, scores, source


# ------------------------------------------------------------------------------ the readers
def _refused(reader, *args, **kwargs) -> str:
    with pytest.raises(StudentError) as caught:
        reader(*args, **kwargs)
    return str(caught.value)


def test_as_array_checks_type_shape_dtype_and_size():
    a = np.zeros((2, 3))
    assert expect.as_array(a, "x", shape=(None, 3), dtype_kind="f") is a
    assert _refused(expect.as_array, [[0.0] * 3] * 2, "x") == "x: expected an array, got a list of 2 items"
    assert "expected shape (any, 4), got shape (2, 3)" in _refused(expect.as_array, a, "x", shape=(None, 4))
    assert "expected shape (6,)" in _refused(expect.as_array, a, "x", shape=(6,))
    assert "expected an array of floating numbers, got dtype int64" in _refused(
        expect.as_array, np.zeros(3, np.int64), "x", dtype_kind="f")
    assert "at most 5 elements" in _refused(expect.as_array, a, "x", max_size=5)


def test_as_numbers_reads_lists_and_arrays_of_numbers_but_never_strings():
    assert expect.as_numbers([1, 2.5], "x").dtype == np.float64
    assert expect.as_numbers(np.arange(4).reshape(2, 2), "x", shape=(2, 2)).tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert expect.as_numbers([np.ones(2), [3, 4]], "x").shape == (2, 2)
    # np.asarray(["0.5"], dtype=float) would read the string as a number: a string is not one
    assert _refused(expect.as_numbers, [0.1, "0.5"], "losses") == (
        "losses: expected a list or array of numbers, got a str ('0.5') at [1]")
    assert "got a dict with the keys ['error'] at [0]" in _refused(expect.as_numbers, [{"error": 1.0}], "errors64")
    assert "got a bool (True) at [0][1]" in _refused(expect.as_numbers, [[1.0, True]], "x")
    assert "rows of different lengths" in _refused(expect.as_numbers, [[1.0], [1.0, 2.0]], "x")
    assert "got a float (0.5)" in _refused(expect.as_numbers, 0.5, "x")
    assert "expected shape (3,), got shape (2,)" in _refused(expect.as_numbers, [1, 2], "x", shape=(3,))
    assert "more than" in _refused(expect.as_numbers, [1.0] * 20, "x", max_size=10)


def test_one_number_bool_and_string():
    assert expect.as_float(3, "x") == 3.0 and isinstance(expect.as_float(3, "x"), float)
    assert _refused(expect.as_float, "0.25", "acc") == "acc: expected a number, got a str ('0.25')"
    assert "got a bool (True)" in _refused(expect.as_float, True, "acc")
    assert expect.as_int(4, "n") == 4
    assert "expected an int, got a float (4.0)" in _refused(expect.as_int, 4.0, "n")
    assert expect.as_bool(False, "f") is False
    assert "expected True or False, got an int (1)" in _refused(expect.as_bool, 1, "f")
    assert expect.as_str("u", "label") == "u"
    assert "expected a string, got a list" in _refused(expect.as_str, ["u"], "label")
    assert expect.as_number_or_array(2.5, "x") == 2.5
    assert "expected an array or a number, got a str" in _refused(expect.as_number_or_array, "2.5", "x")


def test_lists_mappings_and_records():
    assert expect.as_list((1, 2), "x", n=2) == [1, 2]
    assert _refused(expect.as_list, [1], "grads", n=2) == "grads: expected a list of 2 items, got a list of 1 item"
    # the protocol's own tuples (a StridedView, a GraderFunction) are not lists a student returned
    assert "got a GraderFunction" in _refused(expect.as_list, protocol.GraderFunction("t"), "x")
    assert expect.as_mapping({"out": 1, "x": 2}, "r", ("out",)) == {"out": 1, "x": 2}
    assert _refused(expect.as_mapping, [1, 2], "pool_results", ("max", "avg")) == (
        "pool_results: expected a dict with the keys ['avg', 'max'], got a list of 2 items")
    assert "it lacks ['avg']" in _refused(expect.as_mapping, {"max": 1}, "pool_results", ("max", "avg"))
    assert "expected exactly the keys ['max']" in _refused(expect.as_mapping, {"max": 1, "x": 0}, "r", ("max",),
                                                           exact=True)
    records = [{"time": 1.0, "loss": 2.0}]
    assert expect.as_records(records, "runs", ("time", "loss"), n=1) == records
    assert _refused(expect.as_records, {"time": [1.0], "loss": [2.0]}, "experiment_pooling", ("time", "loss")) == (
        "experiment_pooling: expected a list of records with the keys ['loss', 'time'], got a dict with the keys "
        "['loss', 'time']")
    assert "got a float (1.0) at [0]" in _refused(expect.as_records, [1.0], "runs", ("time",))
    assert "runs[0]: expected a dict with the keys ['loss', 'time'], but it lacks ['loss']" in _refused(
        expect.as_records, [{"time": 1.0}], "runs", ("time", "loss"))


# ------------------------------------------------------------------------------ the decoder's depth
def _frame_body(header: bytes) -> bytes:
    return struct.pack(">I", len(header)) + header


def test_a_frame_nested_100000_levels_is_refused_before_it_is_parsed():
    header = b'{"message": ' + b"[" * 100_000 + b"]" * 100_000 + b', "blobs": []}'
    with pytest.raises(protocol.ValueRefused, match="nested more than"):
        protocol.decode(_frame_body(header))
    # the same through the grader's channel: garbage (the student's), never a crash of the grader
    read_fd, write_fd = os.pipe()
    channel = Channel(read_fd, os.open(os.devnull, os.O_WRONLY))
    body = _frame_body(header)
    frame = struct.pack(">Q", len(body)) + body

    def write_all():
        view = memoryview(frame)
        while view:
            view = view[os.write(write_fd, view):]

    writer = threading.Thread(target=write_all)
    writer.start()
    with pytest.raises(ChannelGarbage, match="nested more than"):
        channel.receive(time.monotonic() + 20)
    writer.join()
    channel.close()
    os.close(write_fd)


def test_the_deepest_value_that_may_cross_still_decodes():
    value = np.zeros(2)
    for level in range(protocol.MAX_DEPTH - 1):
        value = [value] if level % 2 else {"k": value}
    message = {"type": "reply", "value": value}
    assert np.array_equal(_innermost(protocol.decode(protocol.encode(message)[8:])["value"]), np.zeros(2))
    with pytest.raises(protocol.ValueRefused):
        protocol.encode({"type": "reply", "value": [[value]]})


def _innermost(value):
    while not isinstance(value, np.ndarray):
        value = value[0] if isinstance(value, list) else value["k"]
    return value


def test_brackets_inside_strings_do_not_count_and_escapes_are_followed():
    deep_text = json.dumps({"message": "[" * 500 + '\\"[[' + "{" * 500, "blobs": []}).encode()
    assert not protocol.json_nested_deeper_than(deep_text, 3)
    assert protocol.decode(_frame_body(deep_text)).startswith("[[[")
    rng = random.Random(0)

    def value(level):
        roll = rng.random()
        if level > 5 or roll < 0.3:
            return rng.choice(['a"b', "\\", "[[{", 'x\\"]]', 1, 2.5, None, '\\\\"['])
        if roll < 0.65:
            return [value(level + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(["k", "[", '"{']): value(level + 1) for _ in range(rng.randint(0, 3))}

    for _ in range(300):
        text = json.dumps(value(0)).encode()
        depth = _reference_depth(json.loads(text))
        for chunk in (3, 7, 1 << 22):  # a string, an escape or a bracket split across chunks
            assert protocol.json_nested_deeper_than(text, depth - 1, chunk=chunk)
            assert not protocol.json_nested_deeper_than(text, depth, chunk=chunk)


def _reference_depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((_reference_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_reference_depth(v) for v in value.values()), default=0)
    return 0


@pytest.mark.parametrize("message", [
    {"__view__": {"__array__": 0, "dtype": "<f8", "shape": [1]}, "shape": "x", "strides": [1], "offset": 0},
    {"__view__": {"__array__": 0, "dtype": "<f8", "shape": [1]}, "strides": [1], "offset": 0},
    {"__view__": {"__array__": 0, "dtype": "<f8", "shape": [1]}, "shape": [1], "strides": [1], "offset": 1e400},
])
def test_valid_json_that_is_not_a_valid_encoding_is_refused(message):
    header = json.dumps({"message": message, "blobs": [8]}).encode()
    with pytest.raises(protocol.ValueRefused, match="malformed"):
        protocol.decode(_frame_body(header) + bytes(8))


# ------------------------------------------------------------------------------ whose fault: suite.py
CONFTEST = '''
import pytest
from course_tools.grading.session.session import current_session

@pytest.fixture(scope="session")
def student():
    return current_session()
'''


def _suite(tmp_path, body: str, assignment: str = "01_forward_ops"):
    """A hidden suite for ``assignment`` whose first graded task is checked by ``body`` (a test
    function's code, given ``student``) and every other task by a check that passes."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "conftest.py").write_text(CONFTEST)
    tasks = list(graded_tasks(release_notebook(assignment)))
    lines = ["from course_tools.grading.session import expect", "from course_tools.grading.suite.run import task", ""]
    lines += [f"@task({tasks[0]!r})", "def test_reads_a_value(student):", textwrap.indent(body, "    "), ""]
    for t in tasks[1:]:
        lines += [f"@task({t!r})", f"def test_{t}(student):", "    pass", ""]
    # a file name of its own: pytest keeps an imported test module for the rest of the process
    (folder / f"test_values_{tmp_path.name}.py").write_text("\n".join(lines))
    return folder, tasks[0]


def test_a_reader_refusing_a_value_fails_that_check_only(tmp_path):
    require_sandbox()
    folder, first = _suite(tmp_path, "expect.as_mapping(student.variable('shape_of_things'), 'shape_of_things', "
                                     "('h', 'w'))")
    path = _write(tmp_path, inject(source("01_forward_ops"), "shape_of_things = [3, 4]"))
    result = run_suite("01_forward_ops", path, suite_dir=folder, **FAST)
    got = scores(result)
    assert got[first][0] == 0 and all(s == p for t, (s, p) in got.items() if t != first)
    message = result["tasks"][first]["checks"][0]["message"]
    assert message == ("your code: shape_of_things: expected a dict with the keys ['h', 'w'], got a list of 2 items")


def test_a_bug_in_the_graders_own_check_is_still_a_grading_error(tmp_path):
    folder, _ = _suite(tmp_path, "limits = {}\nlimits['rtol']  # the grader's own mistake: no student value here")
    result = run_suite("01_forward_ops", _write(tmp_path, source("01_forward_ops")), suite_dir=folder, **FAST)
    assert result["tasks"] == {}
    assert "the grader's check raised KeyError" in result["grading_error"]


def _write(tmp_path, nb):
    path = tmp_path / "submission.ipynb"
    nbformat.write(nb, str(path))
    return path


# ------------------------------------------------------------------------------ arguments read back
def test_the_arrays_a_function_was_given_must_come_back_as_the_grader_sent_them():
    """session/handed.py: which arrays each scenario hands over, in the worker's order, and the
    comparison of what the worker read back after the call with what the grader sent."""
    from course_tools.grading.session.handed import check_unchanged, handed_arrays

    k, x, g = np.arange(8.0).reshape(2, 2, 2), np.ones((2, 3)), np.zeros((2, 3))
    call = handed_arrays("call", ["student:f", [k, 3, "same"], {}, False, None], {})
    assert [label for label, _ in call] == ["its argument 0"]
    assert [label for label, _ in handed_arrays("gradient", ["Conv", {}, [x, k], g], {"output": g})] == [
        "its input 0", "its input 1", "out_grad", "the node's value (the forward's output)"]
    assert [label for label, _ in handed_arrays("call", ["m:f", [x], {}, True, g], {})] == ["its argument 0", "out_grad"]
    assert handed_arrays("variable", ["name"], {}) is None
    check_unchanged("f", call, [k.copy()])
    nan = np.array([np.nan, -0.0, 1.0])
    check_unchanged("f", [("x", nan)], [np.array([np.nan, 0.0, 1.0], dtype=np.float32)])  # NaN is NaN, -0.0 is 0
    for after, message in [([k[:, :, ::-1].copy()], "changed its argument 0 \\(shape \\(2, 2, 2\\)\\) in place"),
                           ([k.reshape(4, 2)], "changed its argument 0"), ([None], "changed its argument 0"),
                           ([np.array(["0"] * 8).reshape(2, 2, 2)], "changed its argument 0"),
                           ([], "could not be read back"), (None, "could not be read back")]:
        with pytest.raises(StudentError, match=message):
            check_unchanged("f", call, after)


# ------------------------------------------------------------------------------ hostile submissions
@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c['assignment']}-{c['name']}") for c in HOSTILE_VALUES])
def test_a_hostile_value_costs_only_its_own_task(tmp_path, case):
    require_sandbox()
    assignment = case["assignment"]
    result = grade(assignment, inject(source(assignment), case["inject"]), tmp_path)
    got = scores(result)  # no grading error
    lost = sorted(t for t, (score, points) in got.items() if score < points)
    assert lost == sorted(case["lose"]), {t: feedback_text(t, result["tasks"][t]) for t in lost}
    messages = [c["message"] for t in case["lose"] for c in result["tasks"][t]["checks"] if not c["passed"]]
    assert any(case["message"] in m for m in messages), messages
