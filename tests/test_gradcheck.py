"""Gradient checking (assignment 06): rel_error, central differences and gradient_check,
the one gradient checker of course_lib, with the function under test on any device."""
import numpy as np
import pytest

from course_lib import Tensor, nd, ops
from course_lib.autograd import TensorOp
from course_lib.gradcheck import central_difference, gradient_check, rel_error


def test_rel_error_is_absolute_for_small_and_relative_for_large_values():
    assert rel_error(np.array([0.0, 1000.0]), np.array([1e-3, 1001.0])) == pytest.approx(1e-3)
    assert rel_error(np.array([0.5]), np.array([0.25])) == pytest.approx(0.25)  # max(1, ...) = 1
    assert rel_error(np.array([200.0]), np.array([100.0])) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        rel_error(np.zeros(2), np.zeros(3))


def test_rel_error_takes_tensors_and_ndarrays_on_any_device(device):
    a = Tensor(np.array([0.0, 1000.0]), device=device, dtype="float64")
    b = nd.array(np.array([1e-3, 1001.0]), device=device)
    assert rel_error(a, b) == pytest.approx(1e-3)
    assert rel_error(a, np.array([0.0, 1000.0])) == 0.0
    # a bare CuPy (or stand-in) array: np.asarray of it raises, rel_error must copy it explicitly
    assert rel_error(device.xp.asarray(np.array([0.0, 1000.0])), b) == pytest.approx(1e-3)


def test_central_difference_matches_hand_derivative():
    x = np.array([[0.5, -1.0], [2.0, 3.0]])
    numeric = central_difference(lambda v: np.sum(v ** 3), x, h=1e-5)
    np.testing.assert_allclose(numeric, 3 * x ** 2, rtol=1e-8)
    assert x[0, 0] == 0.5  # the input is left as it was


def test_central_difference_error_is_second_order_in_h():
    # f = sin: truncation error h^2 |f'''| / 6; halving h quarters it (until rounding dominates)
    def f(v):
        return float(np.sin(v).sum())

    x = np.array([0.7])
    errors = [abs(central_difference(f, x, h)[0] - np.cos(0.7)) for h in (1e-2, 5e-3)]
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.01)


def test_gradient_check_passes_on_correct_ops(device):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    seen = set()

    def f(x, y):
        seen.add(x.device)
        return ops.matmul(ops.tanh(x), y)

    errors = gradient_check(f, a, b, device=device)
    assert len(errors) == 2 and max(errors) < 1e-6
    assert seen == {device}


def test_gradient_check_runs_where_its_tensor_arguments_live(device):
    seen = set()

    def f(x):
        seen.add(x.device)
        return ops.exp(x)

    gradient_check(f, Tensor(np.array([0.5, -1.0]), device=device))
    assert seen == {device}


class _WrongSquare(TensorOp):
    """x**2 with a planted bug: the gradient forgets the factor 2."""

    def compute(self, a):
        return a * a

    def gradient(self, out_grad, node):
        return out_grad * node.inputs[0]


def test_gradient_check_catches_a_planted_bug(device):
    with pytest.raises(AssertionError, match="argument 0"):
        gradient_check(lambda x: _WrongSquare()(x), np.array([1.0, 2.0, -3.0]), device=device)


class _NaNGradient(TensorOp):
    def compute(self, a):
        return a * 2.0

    def gradient(self, out_grad, node):
        return out_grad * float("nan")


def test_gradient_check_fails_on_nan_gradients(device):
    with pytest.raises(AssertionError, match="nan"):
        gradient_check(lambda x: _NaNGradient()(x), np.array([1.0, 2.0]), device=device)
