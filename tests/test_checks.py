"""The visible-check helpers give messages that say what is wrong."""
import numpy as np
import pytest

from course_lib import Tensor, nd, ops
from course_lib.autograd import TensorOp
from course_lib.checks import assert_close, assert_raises, check_gradients


def test_assert_close_names_the_worst_element():
    with pytest.raises(AssertionError, match=r"op: wrong values: .* at index \(1, 0\): got 9, expected 3"):
        assert_close(nd.array([[1.0, 2.0], [9.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]), "op")


@pytest.mark.parametrize("got,message", [
    (None, "forget to `return`"),
    (np.zeros((2, 3)), r"wrong shape: got \(2, 3\), expected \(3, 2\)"),
    (np.full((3, 2), np.nan), "non-finite value nan"),
])
def test_assert_close_explains_common_mistakes(got, message):
    with pytest.raises(AssertionError, match=message):
        assert_close(got, np.zeros((3, 2)), "f")


def test_assert_close_accepts_tensors_and_tolerances():
    assert_close(Tensor([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), "t")


def test_assert_raises_checks_type_and_message():
    assert_raises(ValueError, lambda: ops.reshape(Tensor(np.zeros(6)), (4,)), match=r"\(6,\)")
    with pytest.raises(AssertionError, match="nothing was raised"):
        assert_raises(ValueError, lambda: None)
    with pytest.raises(AssertionError, match="expected ValueError, got KeyError"):
        assert_raises(ValueError, lambda: {}["x"])


class _HalfGradient(TensorOp):
    def compute(self, a):
        return a * a

    def gradient(self, out_grad, node):
        return out_grad * node.inputs[0]  # planted bug: the factor 2 is missing


def test_check_gradients_passes_correct_ops_and_catches_a_wrong_gradient():
    rng = np.random.default_rng(0)
    check_gradients(lambda a, b: ops.matmul(ops.exp(a), b), rng.standard_normal((3, 4)), rng.standard_normal((4, 2)))
    with pytest.raises(AssertionError, match="directional derivative"):
        check_gradients(lambda a: _HalfGradient()(a), rng.standard_normal(5))
