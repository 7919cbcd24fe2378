"""The stand-ins the visible checks lend (course_lib.stand_ins) give the reference answers for every
input they know, refuse the others, and keep their answers out of the clear."""
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
    """01 asks for the order of (2, 3, 4) with axes (0, 2): the table must not show (2, 1, 0)."""
    text = open(stand_ins.__file__, encoding="utf-8").read()
    assert "(2, 1, 0)" not in text and "15.0" not in text


@pytest.mark.parametrize("shape,to", [((2, 1, 4), (5, 2, 3, 4)), ((4,), (3, 4)), ((), (2, 2)), ((3, 1), (3, 4))])
def test_broadcast_copies_is_what_reduce_to_shape_of_ones_gives(shape, to):
    np.testing.assert_array_equal(stand_ins.broadcast_copies(shape, to),
                                  shaping.reduce_to_shape(Tensor(np.ones(to)), shape).numpy())
