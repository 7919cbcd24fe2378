"""The visible-check helpers give messages that say what is wrong, for values on any device."""
import numpy as np
import pytest

from course_lib import Tensor, nd, ops
from course_lib.checks import assert_close, assert_raises


def test_assert_close_names_the_worst_element(device):
    with pytest.raises(AssertionError, match=r"op: wrong values: .* at index \(1, 0\): got 9, expected 3"):
        assert_close(nd.array([[1.0, 2.0], [9.0, 4.0]], device=device), np.array([[1.0, 2.0], [3.0, 4.0]]), "op")


@pytest.mark.parametrize("got,message", [
    (None, "forget to `return`"),
    (np.zeros((2, 3)), r"wrong shape: got \(2, 3\), expected \(3, 2\)"),
    (np.full((3, 2), np.nan), "non-finite value nan"),
])
def test_assert_close_explains_common_mistakes(got, message):
    with pytest.raises(AssertionError, match=message):
        assert_close(got, np.zeros((3, 2)), "f")


def test_assert_close_accepts_tensors_and_tolerances(device):
    assert_close(Tensor([1.0, 2.0], device=device), np.array([1.0, 2.0 + 1e-9]), "t")
    assert_close(Tensor([1.0, 2.0], device=device), Tensor([1.0, 2.0], device=device), "t", check_dtype=True)
    with pytest.raises(AssertionError, match="wrong dtype"):
        assert_close(Tensor([1.0], device=device, dtype="float32"), np.array([1.0]), "t", check_dtype=True)


def test_assert_close_compares_a_bare_device_array(device):
    values = device.xp.asarray(np.array([1.0, 2.0]))  # a NumPy, CuPy or stand-in array
    assert_close(values, [1.0, 2.0], "raw")


def test_assert_raises_checks_type_and_message():
    assert_raises(ValueError, lambda: ops.reshape(Tensor(np.zeros(6)), (4,)), match=r"\(6,\)")
    with pytest.raises(AssertionError, match="nothing was raised"):
        assert_raises(ValueError, lambda: None)
    with pytest.raises(AssertionError, match="expected ValueError, got KeyError"):
        assert_raises(ValueError, lambda: {}["x"])


def test_lent_stands_in_for_another_task_and_puts_it_back():
    import types

    from course_lib.checks import lent

    class Base:
        def compute(self):
            return "base"

    class Op(Base):
        def gradient(self):
            return "mine"

    module = types.SimpleNamespace(helper=lambda: "student")
    namespace = {"reduce": "student"}
    with lent(Op, "compute", lambda self: "lent"), lent(Op, "gradient", lambda self: "lent too"), \
            lent(module, "helper", lambda: "lent"), lent(namespace, "reduce", "lent"):
        assert (Op().compute(), Op().gradient(), module.helper(), namespace["reduce"]) == ("lent", "lent too", "lent", "lent")
    assert (Op().compute(), Op().gradient(), module.helper(), namespace["reduce"]) == ("base", "mine", "student", "student")
    assert "compute" not in Op.__dict__          # the inherited method is inherited again
    try:
        with lent(namespace, "missing", 1):
            raise KeyError("a failing check")
    except KeyError:
        pass
    assert "missing" not in namespace            # put back even when the check fails


@pytest.mark.parametrize("error,shown", [(NotImplementedError(), "not written yet"),
                                         (ValueError("shapes (3,) and (4,) do not match"), "ValueError: shapes"),
                                         (AssertionError("dW: wrong values"), "AssertionError: dW: wrong values")])
def test_a_demonstration_reports_a_failure_and_lets_run_all_go_on(error, shown, capsys):
    from course_lib.checks import demonstration

    after = []
    with demonstration("the demo"):
        raise error
    after.append("the cell went on")   # nothing escaped the with block
    printed = capsys.readouterr().out
    assert after and "the demo could not run" in printed and shown in printed
    with demonstration("the demo"):
        after.append("a body that works runs as usual")
    assert capsys.readouterr().out == "" and len(after) == 2


# A visible check loops over its cases with a plain `for`; the student's function, defined in the
# same notebook, raises somewhere inside one of them (01's normalize_axes gave only "TypeError:
# 'numpy.int64' object is not iterable"). Cells are compiled under a name that linecache knows, as
# IPython does.
_CELL = '''\
def normalize(axis, ndim):
    return tuple(a % ndim for a in axis)      # forgets that axis may be one integer

import numpy as np
for axis, ndim in [((0, 1), 2), ((-1,), 3)]:
    assert normalize(axis, ndim) is not None
x = np.zeros((2, 3))
for shape in [(2, 3)]:
    for axis, ndim in [((1,), 2), (np.int64(1), 2)]:
        normalize(axis, ndim)
'''


def _run_cell(source, name):
    import linecache

    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    namespace = {}
    try:
        exec(compile(source, name, "exec"), namespace)
    except Exception as err:
        return namespace, err
    finally:
        linecache.cache.pop(name, None)
    raise AssertionError("the cell did not raise")


def test_an_error_inside_a_checks_loop_names_the_case(tmp_path):
    import linecache
    import types

    from course_lib.checks import _traceback_with_note, case_being_checked

    name = "<cell-case>"
    namespace, err = _run_cell(_CELL, name)
    assert isinstance(err, TypeError)
    linecache.cache[name] = (len(_CELL), None, _CELL.splitlines(True), name)
    try:
        assert case_being_checked(err.__traceback__, namespace) == "shape=(2, 3), axis=np.int64(1), ndim=2"
        assert case_being_checked(err.__traceback__, {}) is None        # code that is not the notebook's
        shown = []
        shell = types.SimpleNamespace(user_ns=namespace, _showtraceback=lambda *a: shown.append(a),
                                      InteractiveTB=types.SimpleNamespace(structured_traceback=lambda *a, **k: ["tb"]))
        _traceback_with_note(shell, TypeError, err, err.__traceback__)
        etype, evalue, lines = shown.pop()
        # the one-line message (what `course check` reports) and the traceback both name the case
        assert str(evalue) == f"{err} (while checking the case shape=(2, 3), axis=np.int64(1), ndim=2)"
        assert "While checking the case shape=(2, 3), axis=np.int64(1), ndim=2" in lines
        # a check's own AssertionError names its case already; a stub's NotImplementedError is no case's
        for own in (AssertionError("normalize((1,), 2): wrong"), NotImplementedError()):
            _traceback_with_note(shell, type(own), own, err.__traceback__)
            etype, evalue, lines = shown.pop()
            assert evalue is own and not any("While checking" in line for line in lines)
    finally:
        linecache.cache.pop(name, None)


def test_the_students_own_loop_is_not_the_case():
    import linecache

    from course_lib.checks import case_being_checked

    name = "<cell-own-loop>"
    source = ("def normalize(axis, ndim):\n    out = []\n    for a in axis:\n        out.append(a % ndim)\n"
              "    return tuple(out)\n\nfor axis in [(0, 1), (0, None)]:\n    normalize(axis, 2)\n")
    namespace, err = _run_cell(source, name)
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        assert case_being_checked(err.__traceback__, namespace) == "axis=(0, None)"
    finally:
        linecache.cache.pop(name, None)


def test_an_error_outside_any_loop_and_a_large_case_value():
    import linecache

    from course_lib.checks import _short, case_being_checked

    name = "<cell-no-loop>"
    source = "value = 1\nvalue.missing\n"
    namespace, err = _run_cell(source, name)
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    try:
        assert case_being_checked(err.__traceback__, namespace) is None
    finally:
        linecache.cache.pop(name, None)
    assert _short(np.zeros((40, 50))) == "<ndarray of shape (40, 50), float64>"
    assert _short("x" * 100).endswith("...") and len(_short("x" * 100)) == 60


def test_check_gradient_passes_the_reference_and_names_what_is_wrong():
    from course_lib.backward_checks import backward_check, check_gradient

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.uniform(0.5, 2.0, (2, 3))
    check_gradient("divide", ops.divide, lambda x, y: x / y, [a, b], needs={0: [1], 1: [0, 1]})
    backward_check(lambda x, y: ops.relu(x / y), a, b)

    class RawExp(ops.Exp):            # right numbers, but the gradient leaves the graph
        def gradient(self, out_grad, node):
            return Tensor(out_grad.numpy() * node.numpy(), dtype=node.dtype)

    class WrongNegate(ops.Negate):    # a graph, but the sign is wrong
        def gradient(self, out_grad, node):
            return out_grad

    with pytest.raises(AssertionError, match=r"raw exp \(inputs \(2, 3\)\): gradient 0 is not computed from out_grad"):
        check_gradient("raw exp", lambda t: RawExp()(t), np.exp, [a])
    with pytest.raises(AssertionError, match="gradient of input 0 .* disagrees with finite differences"):
        check_gradient("negate", lambda t: WrongNegate()(t), lambda x: -x, [a])
    with pytest.raises(AssertionError, match="backward: the gradient of input 0"):
        backward_check(lambda t: WrongNegate()(t), a)
