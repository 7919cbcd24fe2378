"""ops.conv (NHWC input, (KH, KW, C_in, C_out) kernel) vs torch.nn.functional.conv2d (NCHW),
finite differences, the hand-computed example, second order, and bad arguments."""
import importlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_lib import ops
from conftest import (ORACLE_DTYPES, assert_close, check_against_torch, check_finite_differences,
                      check_second_order_against_torch, from_torch_nchw, kernel_from_torch, kernel_to_torch, tensor,
                      to_torch_nchw)

# (N, H, W, C_in, C_out, KH, KW, stride, padding, dilation)
CONV_CASES = [
    (2, 5, 5, 3, 4, 3, 3, 1, 0, 1),
    (2, 5, 5, 3, 4, 3, 3, 1, 1, 1),
    (1, 6, 6, 2, 3, 3, 3, 2, 1, 1),
    (1, 7, 7, 2, 2, 5, 5, 1, 2, 1),
    (1, 8, 8, 2, 3, 5, 5, 2, 0, 1),
    (2, 4, 4, 3, 2, 1, 1, 1, 0, 1),
    (1, 7, 7, 3, 2, 1, 1, 2, 0, 1),
    (1, 4, 4, 2, 2, 1, 1, 1, 2, 1),      # padding larger than the kernel's reach
    (1, 5, 5, 2, 2, 3, 3, 1, 2, 1),
    (1, 7, 9, 2, 3, 3, 3, 2, 2, 1),      # odd, non-square input
    (2, 6, 6, 16, 32, 3, 3, 1, 1, 1),    # many channels
    (1, 6, 5, 2, 3, 3, 2, 1, 1, 1),      # 3x2 kernel
    (1, 5, 6, 2, 2, 1, 3, 1, 0, 1),      # 1x3 kernel
    (1, 6, 7, 2, 2, 1, 3, 2, 1, 1),
    (1, 7, 9, 2, 3, 3, 3, 1, 0, 2),      # dilation 2
    (1, 9, 9, 2, 2, 3, 3, 1, 2, 3),      # dilation 3
    (1, 8, 7, 2, 3, 3, 2, 2, 1, 2),      # dilation and stride, non-square kernel
    (1, 5, 5, 1, 1, 5, 5, 1, 0, 1),      # kernel as large as the input
    (1, 6, 6, 2, 2, 2, 2, 3, 0, 1),      # stride larger than the kernel: skipped pixels
    (1, 7, 7, 2, 2, 3, 3, 3, 1, 1),
]


def conv_id(case):
    n, h, w, ci, co, kh, kw, s, p, d = case
    return f"N{n}-{h}x{w}-C{ci}to{co}-K{kh}x{kw}-s{s}-p{p}-d{d}"


def conv_inputs(rng, case):
    n, h, w, ci, co, kh, kw, s, p, d = case
    return rng.standard_normal((n, h, w, ci)), rng.standard_normal((kh, kw, ci, co))


def ours_conv(s, p, d):
    return lambda x, w: ops.conv(x, w, stride=s, padding=p, dilation=d)


def torch_conv_nhwc(s, p, d):
    """torch's conv2d (NCHW, OIHW) applied to NHWC inputs and an HWIO kernel: permute in and out."""
    def conv(x, w):
        out = F.conv2d(x.permute(0, 3, 1, 2).contiguous(), w.permute(3, 2, 0, 1).contiguous(),
                       stride=s, padding=p, dilation=d)
        return out.permute(0, 2, 3, 1)
    return conv


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
@pytest.mark.parametrize("case", CONV_CASES, ids=conv_id)
def test_conv_matches_torch_conv2d(device, rng, case, dtype):
    *_, s, p, d = case
    check_against_torch(ours_conv(s, p, d), torch_conv_nhwc(s, p, d), conv_inputs(rng, case), dtype, device, rng)


@pytest.mark.parametrize("case", CONV_CASES, ids=conv_id)
def test_conv_gradients_match_torch_nn_grad(device, rng, case):
    n, h, w_, ci, co, kh, kw, s, p, d = case
    x, w = conv_inputs(rng, case)
    x_c, w_c = tensor(x, device), tensor(w, device)
    out = ops.conv(x_c, w_c, stride=s, padding=p, dilation=d)
    v = rng.standard_normal(out.shape)
    out.backward(tensor(v, device, requires_grad=False))
    v_t = to_torch_nchw(v)
    grad_x = torch.nn.grad.conv2d_input((n, ci, h, w_), kernel_to_torch(w), v_t, stride=s, padding=p, dilation=d)
    grad_w = torch.nn.grad.conv2d_weight(to_torch_nchw(x), (co, ci, kh, kw), v_t, stride=s, padding=p, dilation=d)
    assert_close(x_c.grad, from_torch_nchw(grad_x), what="input gradient")
    assert_close(w_c.grad, kernel_from_torch(grad_w), what="kernel gradient")


@pytest.mark.parametrize("case", [
    (1, 4, 4, 2, 2, 3, 3, 1, 0, 1),
    (1, 5, 4, 1, 2, 3, 2, 2, 1, 1),
    (2, 5, 5, 1, 1, 2, 2, 1, 1, 2),
    (1, 3, 3, 2, 1, 1, 1, 2, 1, 1),
], ids=conv_id)
def test_conv_gradients_match_finite_differences(device, rng, case):
    *_, s, p, d = case
    check_finite_differences(ours_conv(s, p, d), conv_inputs(rng, case), device, rng)


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
def test_conv_worked_example_3x3_input_2x2_ones_kernel(device, dtype):
    x = tensor(np.arange(1.0, 10.0).reshape(1, 3, 3, 1), device, dtype)
    w = tensor(np.ones((2, 2, 1, 1)), device, dtype)
    out = ops.conv(x, w)
    np.testing.assert_array_equal(out.numpy().reshape(2, 2), [[12, 16], [24, 28]])
    out.backward(tensor(np.ones((1, 2, 2, 1)), device, dtype, requires_grad=False))
    np.testing.assert_array_equal(w.grad.numpy().reshape(2, 2), [[12, 16], [24, 28]])
    np.testing.assert_array_equal(x.grad.numpy().reshape(3, 3), [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


@pytest.mark.parametrize("case", [
    (1, 4, 4, 2, 2, 3, 3, 1, 1, 1),
    (1, 6, 5, 1, 2, 3, 2, 2, 0, 1),
    (1, 6, 6, 1, 1, 2, 2, 1, 1, 2),
], ids=conv_id)
def test_conv_gradient_of_gradient_matches_torch(device, rng, case):
    *_, s, p, d = case
    check_second_order_against_torch(ours_conv(s, p, d), torch_conv_nhwc(s, p, d), conv_inputs(rng, case),
                                     "float64", device, rng)


# ---------------------------------------------------------------------------- bad arguments
def test_conv_channel_mismatch_raises_naming_shapes(device):
    with pytest.raises(ValueError, match=r"\(1, 5, 5, 3\)") as info:
        ops.conv(tensor(np.ones((1, 5, 5, 3)), device), tensor(np.ones((3, 3, 2, 4)), device))
    assert "(3, 3, 2, 4)" in str(info.value)


@pytest.mark.parametrize("padding", [0, 1])
def test_conv_kernel_larger_than_padded_input_raises(device, padding):
    with pytest.raises(ValueError, match=r"\(6, 6\)"):
        ops.conv(tensor(np.ones((1, 3, 3, 1)), device), tensor(np.ones((6, 6, 1, 1)), device), padding=padding)


def test_conv_dilated_kernel_larger_than_input_raises(device):
    with pytest.raises(ValueError, match="dilation"):
        ops.conv(tensor(np.ones((1, 4, 4, 1)), device), tensor(np.ones((3, 3, 1, 1)), device), dilation=2)


@pytest.mark.parametrize("kwargs, name", [
    (dict(stride=0), "stride"), (dict(stride=-1), "stride"), (dict(dilation=0), "dilation"),
    (dict(padding=-1), "padding"), (dict(stride=1.5), "stride"),
], ids=str)
def test_conv_bad_stride_dilation_padding_raise(device, kwargs, name):
    with pytest.raises(ValueError, match=name):
        ops.conv(tensor(np.ones((1, 5, 5, 1)), device), tensor(np.ones((3, 3, 1, 1)), device), **kwargs)


def test_conv_needs_4d_operands(device):
    with pytest.raises(ValueError, match=r"\(5, 5, 1\)"):
        ops.conv(tensor(np.ones((5, 5, 1)), device), tensor(np.ones((3, 3, 1, 1)), device))


def test_conv_mismatched_dtypes_raise_naming_dtypes(device):
    with pytest.raises(TypeError, match="float32") as info:
        ops.conv(tensor(np.ones((1, 5, 5, 1)), device, "float32"), tensor(np.ones((3, 3, 1, 1)), device, "float64"))
    assert "float64" in str(info.value)


# ---------------------------------------------------------------------------- pieces (Conv.evaluate)
PIECE_CASES = [
    (5, 9, 9, 3, 4, 3, 3, 1, 1, 1),      # image pieces, last one shorter
    (4, 10, 8, 5, 2, 3, 2, 2, 1, 1),     # stride 2: the backward's dilated gradient in pieces
    (3, 11, 11, 7, 3, 5, 5, 1, 2, 2),    # K=5, dilation 2
]


@pytest.mark.parametrize("min_rows", [1, 10_000], ids=["image-pieces", "channel-pieces"])
@pytest.mark.parametrize("case", PIECE_CASES, ids=conv_id)
def test_conv_in_cache_sized_pieces_matches_torch(rng, monkeypatch, case, min_rows):
    """With a tiny cache budget every conv of the forward and backward runs in pieces (one
    image, or one input channel, at a time); the values must stay torch's."""
    from course_lib.backend import cpu
    conv_module = importlib.import_module("course_lib.ops.conv")

    monkeypatch.setattr(conv_module, "COLUMN_CACHE_BYTES", 1)
    monkeypatch.setattr(conv_module, "MIN_PIECE_ROWS", min_rows)
    pieces = []
    compute = conv_module.Conv.compute
    monkeypatch.setattr(conv_module.Conv, "compute", lambda self, a, b: pieces.append(a.shape) or compute(self, a, b))
    n, h, w_, ci, co, kh, kw, s, p, d = case
    x, w = conv_inputs(rng, case)
    x_c, w_c = tensor(x, cpu()), tensor(w, cpu())
    out = ops.conv(x_c, w_c, stride=s, padding=p, dilation=d)
    expected = torch_conv_nhwc(s, p, d)(torch.tensor(x), torch.tensor(w))
    assert_close(out, expected.numpy(), what="output computed in pieces")
    split_along = 0 if min_rows == 1 else 3
    assert pieces[0][split_along] == 1 and len(pieces) == x.shape[split_along], pieces

    v = rng.standard_normal(out.shape)
    out.backward(tensor(v, cpu(), requires_grad=False))
    v_t = to_torch_nchw(v)
    grad_x = torch.nn.grad.conv2d_input((n, ci, h, w_), kernel_to_torch(w), v_t, stride=s, padding=p, dilation=d)
    grad_w = torch.nn.grad.conv2d_weight(to_torch_nchw(x), (co, ci, kh, kw), v_t, stride=s, padding=p, dilation=d)
    assert_close(x_c.grad, from_torch_nchw(grad_x), what="input gradient computed in pieces")
    assert_close(w_c.grad, kernel_from_torch(grad_w), what="kernel gradient computed in pieces")


def test_conv_pieces_keep_float32(rng, monkeypatch):
    from course_lib.backend import cpu
    conv_module = importlib.import_module("course_lib.ops.conv")

    monkeypatch.setattr(conv_module, "COLUMN_CACHE_BYTES", 1)
    for min_rows in (1, 10_000):
        monkeypatch.setattr(conv_module, "MIN_PIECE_ROWS", min_rows)
        out = ops.conv(tensor(rng.standard_normal((3, 6, 6, 2)), cpu(), "float32"),
                       tensor(rng.standard_normal((3, 3, 2, 4)), cpu(), "float32"), padding=1)
        assert out.dtype == "float32" and out.shape == (3, 6, 6, 4)
