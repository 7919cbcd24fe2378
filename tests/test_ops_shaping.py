"""Shaping ops (matmul, summation, broadcast_to, reshape, transpose, logsumexp, stack, split)
forward and backward vs PyTorch (float64, float32) and finite differences."""
import numpy as np
import pytest
import torch

from course_lib import ops
from course_lib.nd import _normalize_axes
from conftest import (ORACLE_DTYPES, OpCase, assert_close, case_params, check_case_against_torch,
                      check_case_finite_differences, check_second_order_against_torch, large, normal, tensor)


def _torch_axes(axes, ndim):
    return tuple(range(ndim)) if axes is None else axes


MATMUL = [OpCase("matmul", ops.matmul, torch.matmul, shapes) for shapes in [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 3, 4), (2, 4, 5)),
    ((5, 1, 3, 4), (2, 4, 6)),
    ((2, 1, 3, 4), (1, 3, 4, 2)),
    ((1, 1), (1, 3)),
]]

SUMMATION = [
    OpCase(f"summation_{axes}", lambda a, axes=axes: ops.summation(a, axes),
           lambda a, axes=axes: torch.sum(a, dim=_torch_axes(axes, a.ndim)), (shape,))
    for shape, axes in [((2, 3, 4), None), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), (0, 2)),
                        ((2, 3, 4), -1), ((2, 3, 4), (-1, -3)), ((2, 3, 4), (0, 1, 2)), ((5,), None),
                        ((5,), 0), ((3, 1, 4), 1)]
]

BROADCAST = [
    OpCase(f"broadcast_to_{new}", lambda a, new=new: ops.broadcast_to(a, new),
           lambda a, new=new: torch.broadcast_to(a, new), (shape,))
    for shape, new in [((), (3, 4)), ((), (1,)), ((1,), (5,)), ((1,), (2, 3)), ((3, 1), (3, 4)),
                       ((1, 4), (3, 4)), ((3, 1), (2, 3, 4)), ((2, 1, 3), (4, 2, 5, 3)), ((3, 4), (3, 4)),
                       ((1, 1), (2, 3))]
]

RESHAPE = [
    OpCase(f"reshape_{new}", lambda a, new=new: ops.reshape(a, new),
           lambda a, new=new: torch.reshape(a, new), (shape,))
    for shape, new in [((2, 3, 4), (6, 4)), ((2, 3, 4), (24,)), ((2, 3, 4), (4, -1)), ((6,), (2, 1, 3)),
                       ((), (1, 1)), ((1,), ())]
]

TRANSPOSE = [
    OpCase(f"transpose_{axes}", lambda a, axes=axes: ops.transpose(a, axes),
           lambda a, axes=axes: a.transpose(*(axes or (-2, -1))), (shape,))
    for shape, axes in [((3, 4), None), ((2, 3, 4), None), ((2, 3, 4), (0, 2)), ((2, 3, 4), (-1, 0)),
                        ((2, 3, 4, 5), (1, 2)), ((2, 3, 4, 5), (0, 3))]
]

# fd_h: |f| ~ 1e3 for inputs near 1000, so a larger step keeps the difference's round-off small.
LOGSUMEXP = [
    OpCase(f"logsumexp_{axes}", lambda a, axes=axes: ops.logsumexp(a, axes),
           lambda a, axes=axes: torch.logsumexp(a, dim=_torch_axes(axes, a.ndim)), (shape,), make=make,
           fd_h=1e-4 if make is large else 1e-5)
    for shape, axes, make in [((2, 3, 4), None, normal), ((2, 3, 4), 1, normal), ((2, 3, 4), (0, 2), normal),
                              ((2, 3, 4), -1, normal), ((3, 5), 1, large), ((3, 5), None, large),
                              ((2, 3, 4), (0, 2), large), ((6,), 0, normal)]
]

STACK = [
    OpCase(f"stack_axis{axis}", lambda *xs, axis=axis: ops.stack(xs, axis),
           lambda *xs, axis=axis: torch.stack(xs, axis), (shape,) * n)
    for shape, axis, n in [((2, 3), 0, 3), ((2, 3), 1, 3), ((2, 3), 2, 2), ((2, 3), -1, 2), ((4,), 0, 1)]
] + [
    OpCase("stack_one_tensor_twice", lambda a: ops.stack([a, ops.exp(a), a], 1),
           lambda a: torch.stack([a, torch.exp(a), a], 1), ((2, 3),)),
]

SPLIT = [
    OpCase(f"split_axis{axis}_restacked", lambda a, axis=axis: ops.stack(ops.split(a, axis).tuple(), 0),
           lambda a, axis=axis: torch.stack(torch.unbind(a, axis), 0), ((2, 3, 4),))
    for axis in (0, 1, 2, -1)
] + [
    # Only some parts used: the others must receive zero gradient.
    OpCase("split_some_parts_used", lambda a: ops.split(a, 1)[0] * ops.split(a, 1)[2],
           lambda a: torch.unbind(a, 1)[0] * torch.unbind(a, 1)[2], ((2, 3, 4),)),
    OpCase("split_one_part_used_twice", lambda a: (lambda parts: parts[1] * parts[1] + parts[3])(ops.split(a, 0)),
           lambda a: (lambda parts: parts[1] * parts[1] + parts[3])(torch.unbind(a, 0)), ((4, 3),)),
]

# Views feeding other ops: transpose and broadcast results are non-compact NDArrays.
COMPOSED = [
    OpCase("transpose-matmul-sum", lambda a, b: ops.summation(ops.matmul(ops.transpose(a), b) * 2.0, (0,)),
           lambda a, b: torch.sum(torch.matmul(a.transpose(-2, -1), b) * 2.0, 0), ((2, 4, 3), (4, 5))),
    OpCase("broadcast-multiply-reshape", lambda a, b: ops.reshape(ops.broadcast_to(a, (2, 3, 4)) * b, (6, 4)),
           lambda a, b: torch.reshape(torch.broadcast_to(a, (2, 3, 4)) * b, (6, 4)), ((3, 1), (2, 3, 4))),
    OpCase("softmax-via-logsumexp", lambda a: ops.exp(a - ops.broadcast_to(ops.reshape(ops.logsumexp(a, 1), (3, 1)), (3, 5))),
           lambda a: torch.softmax(a, 1), ((3, 5),)),
]

CASES = MATMUL + SUMMATION + BROADCAST + RESHAPE + TRANSPOSE + LOGSUMEXP + STACK + SPLIT + COMPOSED


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
def test_logsumexp_is_finite_where_naive_exp_overflows(device, dtype):
    values = np.array([[1000.0, 1000.0, 999.0], [-1000.0, -1000.0, -1001.0]])
    x = tensor(values, device, dtype)
    out = ops.logsumexp(x, 1)
    expected = np.array([1000.0 + np.log(2 + np.exp(-1.0)), -1000.0 + np.log(2 + np.exp(-1.0))])
    assert_close(out, expected, dtype)
    out.backward(tensor(np.ones(2), device, dtype, requires_grad=False))
    assert x.grad.realize_cached_data().isfinite()
    softmax_row = np.array([1.0, 1.0, np.exp(-1.0)]) / (2 + np.exp(-1.0))
    assert_close(x.grad, np.stack([softmax_row, softmax_row]), dtype)


@pytest.mark.parametrize("row", [[-np.inf, -np.inf, -np.inf], [np.inf, 1.0, -2.0], [-np.inf, 0.5, -np.inf]],
                         ids=["all-minus-inf", "plus-inf", "some-minus-inf"])
def test_logsumexp_of_infinite_inputs_matches_torch(device, row):
    """log(sum(exp(.))) of -inf entries (zero probabilities) is -inf; with a +inf entry it is +inf."""
    values = np.array([row, [0.0, 1.0, 2.0]])
    out = ops.logsumexp(tensor(values, device), 1)
    np.testing.assert_array_equal(out.numpy(), torch.logsumexp(torch.tensor(values), 1).numpy())


def test_split_returns_one_tensor_per_index(device, rng):
    values = rng.standard_normal((2, 3, 4))
    parts = ops.split(tensor(values, device), 1)
    assert len(parts) == 3
    for i, part in enumerate(parts.tuple()):
        assert part.shape == (2, 4)
        np.testing.assert_array_equal(part.numpy(), values[:, i, :])


def test_stack_of_different_shapes_raises(device):
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        ops.stack([tensor(np.ones((2, 3)), device), tensor(np.ones((3, 2)), device)], 0)


def test_matmul_of_unaligned_tensors_raises_naming_shapes(device):
    with pytest.raises(ValueError, match=r"\(2, 3\)") as info:
        ops.matmul(tensor(np.ones((2, 3)), device), tensor(np.ones((4, 5)), device))
    assert "(4, 5)" in str(info.value)


def test_broadcast_to_incompatible_shape_raises(device):
    with pytest.raises(ValueError, match=r"\(3,\)"):
        ops.broadcast_to(tensor(np.ones(3), device), (4,))


@pytest.mark.parametrize("axes, expected", [(None, (0, 1, 2)), (-1, (2,)), ((2, 0), (0, 2)), (np.int64(1), (1,)),
                                            ([np.int32(-1), 0], (0, 2)), ((), ())])
def test_the_one_axis_normaliser(axes, expected):
    assert _normalize_axes(axes, 3) == expected
    assert all(type(a) is int for a in _normalize_axes(axes, 3))


@pytest.mark.parametrize("axes, error, message", [(3, ValueError, "out of range"), ((0, -3), ValueError, "repeated"),
                                                  (1.0, TypeError, "ints"), ((0, 1.5), TypeError, "ints"),
                                                  ("0", TypeError, "ints"), (True, TypeError, "ints")])
def test_the_one_axis_normaliser_refuses_what_is_not_an_axis(axes, error, message):
    with pytest.raises(error, match=message):
        _normalize_axes(axes, 3)


def test_summation_and_transpose_take_numpy_integer_axes(device):
    x = tensor(np.arange(24.0).reshape(2, 3, 4), device)
    assert ops.summation(x, np.int64(1)).shape == (2, 4)
    assert ops.transpose(x, (np.int64(0), np.int64(2))).shape == (4, 3, 2)
    with pytest.raises(ValueError, match="two distinct axes"):
        ops.transpose(x, (0, 1, 2))
