"""flip, dilate and undilate forward and backward vs PyTorch (float64, float32) and finite
differences, plus the hand-computed dilation example."""
import numpy as np
import pytest
import torch

from course_lib import ops
from conftest import (ORACLE_DTYPES, OpCase, assert_close, case_params, check_case_against_torch,
                      check_case_finite_differences, check_second_order_against_torch, tensor)


def _steps(ndim, axes, step):
    axes = {ax % ndim for ax in ((axes,) if isinstance(axes, int) else axes)}
    return tuple(slice(None, None, step) if i in axes else slice(None) for i in range(ndim))


def torch_dilate(a, axes, dilation):
    """Reference dilation: zeros with ``a`` written at every (dilation + 1)-th position."""
    step = dilation + 1
    ndim = a.ndim
    axes_set = {ax % ndim for ax in ((axes,) if isinstance(axes, int) else axes)}
    out = a.new_zeros(tuple(n * step if i in axes_set else n for i, n in enumerate(a.shape)))
    out[_steps(ndim, axes, step)] = a
    return out


def torch_undilate(a, axes, dilation):
    return a[_steps(a.ndim, axes, dilation + 1)]


FLIP = [
    OpCase(f"flip_{axes}", lambda a, axes=axes: ops.flip(a, axes), lambda a, axes=axes: torch.flip(a, axes), (shape,))
    for shape, axes in [((5,), (0,)), ((3, 4), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)), ((2, 3, 4), (0, 2)),
                        ((2, 3, 4), (-1,)), ((2, 3, 4), (0, 1, 2))]
] + [
    # Flip of non-compact inputs: a transposed view and a broadcast.
    OpCase("flip_of_transpose", lambda a: ops.flip(ops.transpose(a), (0,)),
           lambda a: torch.flip(a.transpose(-2, -1), (0,)), ((3, 4),)),
    OpCase("flip_of_broadcast", lambda a: ops.flip(ops.broadcast_to(a, (2, 3, 4)), (1, 2)),
           lambda a: torch.flip(torch.broadcast_to(a, (2, 3, 4)), (1, 2)), ((3, 1),)),
]

DILATE = [
    OpCase(f"dilate_{axes}_by{d}", lambda a, axes=axes, d=d: ops.dilate(a, axes, d),
           lambda a, axes=axes, d=d: torch_dilate(a, axes, d), (shape,))
    for shape, axes, d in [((2, 2), (0, 1), 1), ((3,), (0,), 0), ((3,), (0,), 2), ((2, 3), (1,), 1),
                           ((2, 3), (0,), 2), ((2, 3, 2), (0, 2), 1), ((2, 3, 2), (0, 1, 2), 2),
                           ((2, 3), (-1,), 1), ((2, 3), (0, 1), 0)]
] + [
    OpCase("dilate_of_transpose", lambda a: ops.dilate(ops.transpose(a), (0,), 1),
           lambda a: torch_dilate(a.transpose(-2, -1), (0,), 1), ((3, 4),)),
]

UNDILATE = [
    OpCase(f"undilate_{axes}_by{d}", lambda a, axes=axes, d=d: ops.undilate(a, axes, d),
           lambda a, axes=axes, d=d: torch_undilate(a, axes, d), (shape,))
    for shape, axes, d in [((4, 4), (0, 1), 1), ((6,), (0,), 2), ((5,), (0,), 1), ((7, 4), (0, 1), 2),
                           ((5, 3, 4), (0, 2), 1), ((3, 5), (-1,), 0), ((2, 7), (1,), 3), ((3, 4), (1,), 5)]
]

CASES = FLIP + DILATE + UNDILATE


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
@pytest.mark.parametrize("case", case_params(CASES))
def test_matches_torch(device, rng, case, dtype):
    check_case_against_torch(case, dtype, device, rng)


@pytest.mark.parametrize("case", case_params(CASES))
def test_gradient_matches_finite_differences(device, rng, case):
    check_case_finite_differences(case, device, rng)


@pytest.mark.parametrize("case", case_params(CASES))
def test_gradient_of_gradient_matches_torch(device, rng, case):
    check_second_order_against_torch(case.ours, case.theirs, case.arrays(rng), "float64", device, rng)


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
def test_dilate_2x2_by_1_gives_the_4x4_example(device, dtype):
    x = tensor([[1.0, 2.0], [3.0, 4.0]], device, dtype)
    out = ops.dilate(x, (0, 1), 1)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), [[1, 0, 2, 0], [0, 0, 0, 0], [3, 0, 4, 0], [0, 0, 0, 0]])


def test_undilate_inverts_dilate(device, rng):
    values = rng.standard_normal((3, 2, 4))
    x = tensor(values, device)
    np.testing.assert_array_equal(ops.undilate(ops.dilate(x, (0, 2), 2), (0, 2), 2).numpy(), values)


def test_undilate_of_a_size_not_a_multiple_of_the_step(device):
    x = tensor(np.arange(1.0, 6.0), device)          # [1, 2, 3, 4, 5], step 2 keeps 1, 3, 5
    out = ops.undilate(x, (0,), 1)
    np.testing.assert_array_equal(out.numpy(), [1.0, 3.0, 5.0])
    out.backward(tensor([10.0, 20.0, 30.0], device, requires_grad=False))
    assert x.grad.shape == (5,)
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 0.0, 20.0, 0.0, 30.0])


@pytest.mark.parametrize("dilation", [-1, 1.5])
def test_bad_dilation_raises(device, dilation):
    with pytest.raises(ValueError, match="dilation"):
        ops.dilate(tensor(np.ones(3), device), (0,), dilation)


def test_flip_twice_is_identity_and_gradient_flips_back(device, rng):
    values = rng.standard_normal((3, 4))
    x = tensor(values, device)
    out = ops.flip(x, (0, 1))
    np.testing.assert_array_equal(ops.flip(out, (0, 1)).numpy(), values)
    upstream = np.arange(12.0).reshape(3, 4)
    out.backward(tensor(upstream, device, requires_grad=False))
    assert_close(x.grad, upstream[::-1, ::-1])


@pytest.mark.parametrize("axes, numpy_axes", [(np.int64(0), (0,)), (np.int32(-2), (0,)),
                                             ((np.int64(1), 0), (0, 1)), ([1], (1,))], ids=str)
def test_flip_and_dilate_take_numpy_integers_and_lists_as_axes(device, axes, numpy_axes):
    values = np.arange(6.0).reshape(2, 3)
    x = tensor(values, device)
    np.testing.assert_array_equal(ops.flip(x, axes).numpy(), np.flip(values, numpy_axes))
    dilated = ops.dilate(x, axes, 1)
    assert dilated.shape == tuple(2 * n if i in numpy_axes else n for i, n in enumerate(values.shape))
