"""The stand-ins the visible checks lend (course_lib.stand_ins) give the reference answers for every
input they know, refuse the others, and keep their answers out of the clear."""
from pathlib import Path

import numpy as np
import pytest

from course_lib import Tensor, nd, stand_ins
from course_lib.ops import shaping


@pytest.mark.parametrize("ndim,axes", list(stand_ins.NORMALIZED_AXES))
def test_normalize_axes_gives_the_reference_answer(ndim, axes):
    assert stand_ins.normalize_axes(axes, ndim) == nd.normalize_axes(axes, ndim)


@pytest.mark.parametrize("axes,ndim", list(stand_ins.PERMUTATIONS))
def test_transpose_permutation_gives_the_reference_answer(axes, ndim):
    assert stand_ins.transpose_permutation(axes, ndim) == shaping.transpose_permutation(axes, ndim)


@pytest.mark.parametrize("grad_shape,shape", list(stand_ins.MATMUL_SUMMED_AXES))
def test_matmul_reduce_to_shape_gives_the_reference_answer(grad_shape, shape):
    grad = Tensor(np.random.default_rng(0).standard_normal(grad_shape))
    np.testing.assert_allclose(stand_ins.matmul_reduce_to_shape(grad, shape).numpy(),
                               shaping.reduce_to_shape(grad, shape).numpy())


def test_inputs_the_checks_never_use_are_refused_and_errors_kept():
    with pytest.raises(AssertionError, match="knows the axes of the checks only"):
        stand_ins.normalize_axes((0, 1), 5)
    with pytest.raises(ValueError, match="out of range"):
        stand_ins.normalize_axes(3, 3)
    with pytest.raises(AssertionError, match="knows the axes of the check only"):
        stand_ins.transpose_permutation((0, 3), 5)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        stand_ins.transpose_permutation(None, 1)
    with pytest.raises(AssertionError, match="never has that shape"):
        stand_ins.matmul_reduce_to_shape(Tensor(np.ones((7, 3, 4))), (3, 4))


def test_the_answers_are_not_written_out():
    """01 asks for the order of (2, 3, 4) with axes (0, 2): neither the table nor 01's release (its
    transpose_permutation check compares shapes with NumPy's swapaxes) shows (2, 1, 0)."""
    text = open(stand_ins.__file__, encoding="utf-8").read()
    assert "(2, 1, 0)" not in text and "15.0" not in text
    release = Path(__file__).resolve().parents[1] / "assignments" / "01_forward_ops" / "01_forward_ops.ipynb"
    assert "(2, 1, 0)" not in release.read_text(encoding="utf-8")


@pytest.mark.parametrize("shape,to", [((2, 1, 4), (5, 2, 3, 4)), ((4,), (3, 4)), ((), (2, 2)), ((3, 1), (3, 4))])
def test_broadcast_copies_is_what_reduce_to_shape_of_ones_gives(shape, to):
    np.testing.assert_array_equal(stand_ins.broadcast_copies(shape, to),
                                  shaping.reduce_to_shape(Tensor(np.ones(to)), shape).numpy())


class _NeverResets:
    """A LossScaler whose update forgets to reset good_steps after a growth (a common mistake)."""

    def __init__(self, init_scale, growth_interval=3, **_):
        self.scale_value, self.growth_interval, self.good_steps, self.skipped_steps = init_scale, growth_interval, 0, 0

    def update(self, finite):
        if finite:
            self.good_steps += 1
            if self.good_steps >= self.growth_interval:
                self.scale_value *= 2
        else:
            self.skipped_steps += 1
            self.good_steps = 0
            self.scale_value /= 2


def test_the_reference_scaler_gives_the_worked_example():
    from course_lib.precision import LossScaler

    assert stand_ins.scaler_example_mismatch(LossScaler) is None
    assert stand_ins.scaler_is_right(LossScaler)


def test_a_wrong_scaler_is_named_at_its_first_wrong_step_without_the_answer():
    message = stand_ins.scaler_example_mismatch(_NeverResets)
    # Steps 1-3 agree with the rules; at step 4 the scale grows but good_steps stays at 3.
    assert "question 3's example" in message and "after step 4" in message and "(8.0, 3, 1)" in message
    assert "(8.0, 0, 1)" not in message                       # the state it should be in: question 3's answer
    assert not stand_ins.scaler_is_right(_NeverResets)


def test_the_worked_table_is_not_written_out():
    text = open(stand_ins.__file__, encoding="utf-8").read()
    assert "(4.0, 0, 2)" not in text and "(8.0, 0, 1)" not in text and "(8.0, 1, 1)" not in text
    assert "(1024.0, 0, 0)" not in text and "(2.0, 0, 6)" not in text


def test_a_scaler_without_a_floor_is_caught_by_the_second_example():
    class NoFloor(_NeverResets):
        def __init__(self, init_scale, growth_factor=2.0, backoff_factor=0.5, growth_interval=3, min_scale=1.0):
            super().__init__(init_scale, growth_interval)
            self.growth_factor, self.backoff_factor = growth_factor, backoff_factor

        def update(self, finite):
            if finite:
                self.good_steps += 1
                if self.good_steps >= self.growth_interval:
                    self.scale_value *= self.growth_factor
                    self.good_steps = 0
            else:
                self.skipped_steps += 1
                self.good_steps = 0
                self.scale_value *= self.backoff_factor

    message = stand_ins.scaler_example_mismatch(NoFloor)
    assert "min_scale 2" in message and "after step 10" in message and "(1.0, 0, 5)" in message


def test_the_lent_topological_sort_orders_by_creation_and_puts_everything_back():
    from course_lib import autograd

    namespace = {"find_topo_sort": "the student's"}
    before = autograd.Value.__dict__["make_from_op"], autograd.find_topo_sort
    with stand_ins.lent_topological_sort(namespace):
        assert namespace["find_topo_sort"] is stand_ins.find_topo_sort_by_creation
        x = Tensor(np.array([1.0, -2.0, 3.0]), dtype="float64")
        v = x * x
        y = v + x
        order = stand_ins.find_topo_sort_by_creation([y])
        assert [id(n) for n in order] == [id(x), id(v), id(y)]
        y.backward(Tensor(np.ones(3), dtype="float64", requires_grad=False))
        np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy() + 1)
        # the graph evaluated again with another x follows it: y = x*x + x
        np.testing.assert_allclose(stand_ins.reevaluate(y, x, np.array([2.0, 0.0, -1.0])).numpy(), [6.0, 0.0, 0.0])
    assert namespace["find_topo_sort"] == "the student's"
    assert (autograd.Value.__dict__["make_from_op"], autograd.find_topo_sort) == before


def test_the_lent_reduce_to_shape_is_lent_everywhere_matmul_looks_and_put_back():
    from course_lib import ops

    namespace = {}
    with stand_ins.lent_matmul_reduce_to_shape(namespace):
        assert namespace["reduce_to_shape"] is shaping.reduce_to_shape is ops.reduce_to_shape \
            is stand_ins.matmul_reduce_to_shape
    assert "reduce_to_shape" not in namespace and shaping.reduce_to_shape is not stand_ins.matmul_reduce_to_shape
