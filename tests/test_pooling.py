"""ops.max_pool2d / ops.avg_pool2d (NHWC) vs torch's max_pool2d / avg_pool2d (NCHW): forward,
backward (ties included), finite differences, second order and the hand-computed examples."""
import numpy as np
import pytest
import torch.nn.functional as F

from course_lib import ops
from conftest import (ORACLE_DTYPES, assert_close, check_against_torch, check_finite_differences,
                      check_second_order_against_torch, from_torch_nchw, tensor, to_torch_nchw)

# (N, H, W, C, kernel, stride, padding); stride None means stride = kernel.
POOL_CASES = [
    (2, 4, 4, 3, 2, None, 0),
    (1, 5, 5, 2, 3, 1, 0),       # overlapping windows
    (1, 6, 6, 2, 3, 2, 1),       # overlapping, padded
    (1, 7, 5, 2, 2, 1, 1),
    (2, 6, 6, 1, 3, 3, 0),
    (1, 5, 7, 3, 2, 2, 1),
    (1, 6, 6, 2, 4, 2, 2),       # padding = kernel / 2
    (1, 7, 7, 1, 3, None, 1),
    (1, 5, 5, 2, 1, 2, 0),       # 1x1 window with stride: a subsampling
]

POOLS = {
    "max": (ops.max_pool2d, F.max_pool2d),
    "avg": (ops.avg_pool2d, F.avg_pool2d),
}


def pool_id(case):
    n, h, w, c, k, s, p = case
    return f"N{n}-{h}x{w}-C{c}-k{k}-s{s}-p{p}"


def pools(kind, k, s, p):
    """(ours, theirs): ours on NHWC course_lib Tensors, theirs torch's pooling on NHWC torch tensors."""
    ours_pool, torch_pool = POOLS[kind]

    def theirs(x):
        out = torch_pool(x.permute(0, 3, 1, 2).contiguous(), k, stride=s, padding=p)
        return out.permute(0, 2, 3, 1)

    return (lambda x: ours_pool(x, k, stride=s, padding=p)), theirs


def small_integers(rng, shape, high=3):
    """Values in {0, ..., high - 1}: most windows have tied maxima."""
    return rng.integers(0, high, shape).astype(np.float64)


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
@pytest.mark.parametrize("kind", POOLS)
@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
def test_pool_matches_torch(device, rng, case, kind, dtype):
    n, h, w, c, k, s, p = case
    check_against_torch(*pools(kind, k, s, p), [rng.standard_normal((n, h, w, c))], dtype, device, rng)


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
@pytest.mark.parametrize("kind", POOLS)
@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
def test_pool_with_ties_matches_torch_exactly(device, rng, case, kind, dtype):
    """Integer inputs: many tied maxima; torch sends the gradient to the first in row-major order."""
    n, h, w, c, k, s, p = case
    x = small_integers(rng, (n, h, w, c))
    v = small_integers(rng, (n, (h + 2 * p - k) // (s or k) + 1, (w + 2 * p - k) // (s or k) + 1, c), high=5)
    ours_pool, torch_pool = POOLS[kind]
    x_c = tensor(x, device, dtype)
    out = ours_pool(x_c, k, stride=s, padding=p)
    x_t = to_torch_nchw(x, dtype, requires_grad=True)
    expected = torch_pool(x_t, k, stride=s, padding=p)
    out.backward(tensor(v, device, dtype, requires_grad=False))
    expected.backward(to_torch_nchw(v, dtype))
    if kind == "max":  # sums of integers, and a choice of position: no rounding at all
        np.testing.assert_array_equal(out.numpy(), from_torch_nchw(expected))
        np.testing.assert_array_equal(x_c.grad.numpy(), from_torch_nchw(x_t.grad))
    else:
        assert_close(out, from_torch_nchw(expected), dtype)
        assert_close(x_c.grad, from_torch_nchw(x_t.grad), dtype)


@pytest.mark.parametrize("kind", POOLS)
@pytest.mark.parametrize("case", [(1, 4, 4, 2, 2, None, 0), (1, 5, 5, 1, 3, 1, 1), (2, 4, 5, 1, 2, 1, 1)],
                         ids=pool_id)
def test_pool_gradient_matches_finite_differences(device, rng, case, kind):
    n, h, w, c, k, s, p = case
    ours, _ = pools(kind, k, s, p)
    # Distinct, well separated values: no finite-difference step can change which element is the max.
    x = rng.permutation(n * h * w * c).reshape(n, h, w, c) * 0.1
    check_finite_differences(ours, [x], device, rng)


@pytest.mark.parametrize("kind", POOLS)
@pytest.mark.parametrize("case, ties", [
    ((1, 4, 4, 2, 2, None, 0), False),
    ((1, 5, 5, 1, 3, 1, 1), False),
    ((1, 5, 5, 2, 3, 2, 1), True),
], ids=lambda v: pool_id(v) if isinstance(v, tuple) else ("ties" if v else "distinct"))
def test_pool_gradient_of_gradient_matches_torch(device, rng, case, ties, kind):
    n, h, w, c, k, s, p = case
    x = small_integers(rng, (n, h, w, c)) if ties else rng.standard_normal((n, h, w, c))
    check_second_order_against_torch(*pools(kind, k, s, p), [x], "float64", device, rng)


# ---------------------------------------------------------------------------- worked examples
@pytest.mark.parametrize("window, expected_grad", [
    ([[1.0, 4.0], [2.0, 3.0]], [[0, 6], [0, 0]]),
    ([[4.0, 1.0], [2.0, 3.0]], [[6, 0], [0, 0]]),
    ([[1.0, 2.0], [3.0, 4.0]], [[0, 0], [0, 6]]),
    ([[4.0, 4.0], [4.0, 4.0]], [[6, 0], [0, 0]]),   # a tie: the first maximum takes it all
], ids=["top-right", "top-left", "bottom-right", "all-tied"])
def test_max_pool_worked_example(device, window, expected_grad):
    x = tensor(np.array(window).reshape(1, 2, 2, 1), device)
    out = ops.max_pool2d(x, 2)
    assert out.numpy().reshape(()) == 4.0
    out.backward(tensor(np.full((1, 1, 1, 1), 6.0), device, requires_grad=False))
    np.testing.assert_array_equal(x.grad.numpy().reshape(2, 2), expected_grad)


def test_avg_pool_worked_example(device):
    x = tensor(np.array([[1.0, 4.0], [2.0, 3.0]]).reshape(1, 2, 2, 1), device)
    out = ops.avg_pool2d(x, 2)
    assert out.numpy().reshape(()) == 2.5
    out.backward(tensor(np.full((1, 1, 1, 1), 6.0), device, requires_grad=False))
    np.testing.assert_array_equal(x.grad.numpy().reshape(2, 2), [[1.5, 1.5], [1.5, 1.5]])


# ---------------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize("pool", [ops.max_pool2d, ops.avg_pool2d], ids=["max", "avg"])
@pytest.mark.parametrize("shape, kwargs", [
    ((1, 4, 4, 1), dict(kernel_size=2, padding=2)),
    ((1, 4, 4, 1), dict(kernel_size=2, stride=0)),
    ((1, 2, 2, 1), dict(kernel_size=3)),
    ((4, 4, 1), dict(kernel_size=2)),
], ids=str)
def test_pool_bad_arguments_raise(device, pool, shape, kwargs):
    with pytest.raises(ValueError):
        pool(tensor(np.ones(shape), device), **kwargs)


# ---------------------------------------------------------------------------- mask and col2im (the pieces of backward)
def loop_windows(x, k, s, p, fill):
    """Every window of NHWC x, one at a time: (N, H_out, W_out, k*k, C)."""
    s = k if s is None else s
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)), constant_values=fill)
    n, h, w, c = xp.shape
    h_out, w_out = (h - k) // s + 1, (w - k) // s + 1
    out = np.empty((n, h_out, w_out, k * k, c), dtype=x.dtype)
    for i in range(h_out):
        for j in range(w_out):
            out[:, i, j] = xp[:, i * s:i * s + k, j * s:j * s + k, :].reshape(n, k * k, c)
    return out


@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
def test_first_max_mask_marks_the_first_maximum_of_each_window(device, rng, case):
    n, h, w, c, k, s, p = case
    x = rng.integers(0, 3, (n, h, w, c)).astype(np.float64)          # many ties
    windows = loop_windows(x, k, s, p, -np.inf)
    expected = (np.arange(k * k)[None, None, None, :, None] == windows.argmax(axis=3)[:, :, :, None, :])
    got = ops.FirstMaxMask(k, s, p)(tensor(x, device)).numpy()
    np.testing.assert_array_equal(got, expected.astype(np.float64))


@pytest.mark.parametrize("case", POOL_CASES, ids=pool_id)
def test_col2im_is_the_adjoint_of_the_windows(device, rng, case):
    """<Im2Col(x), cols> == <x, Col2Im(cols)>, and each op's gradient is the other one."""
    n, h, w, c, k, s, p = case
    x = rng.standard_normal((n, h, w, c))
    windows = loop_windows(x, k, s, p, 0.0)
    cols = rng.standard_normal(windows.shape)
    assert_close(ops.Im2Col(x.shape, k, s, p)(tensor(x, device)).numpy(), windows, what="Im2Col")
    back = ops.Col2Im(x.shape, k, s, p)(tensor(cols, device)).numpy()
    assert abs(np.sum(windows * cols) - np.sum(x * back)) < 1e-9 * max(1.0, np.abs(np.sum(x * back)))
    check_finite_differences(lambda t: ops.Col2Im(x.shape, k, s, p)(t), [cols], device, rng)
