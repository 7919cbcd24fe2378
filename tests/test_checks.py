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
