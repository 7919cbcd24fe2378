"""Hidden checks of 04_conv_backward: the naive loops, im2col forward, backward as convolutions,
nn.Conv and the worked example, against PyTorch (CPU, float64) on shapes the notebook never used.

Layouts: course_lib's conv is NHWC with a (KH, KW, C_in, C_out) kernel; PyTorch and the naive
loops are NCHW with a (C_out, C_in, KH, KW) kernel.
"""
import numpy as np
import pytest
import torch

from course_tools.grading.api import (StudentError, as_mapping, expect_close, expect_worked, oihw, task,
                                      torch_conv_nchw, torch_conv_nhwc, worked_answer)

torch.set_num_threads(1)


def out_size(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def label(cfg):
    n, h, w, c_in, c_out, kh, kw, s, p, d = cfg
    return f"input {(n, h, w, c_in)}, kernel {(kh, kw, c_in, c_out)}, stride {s}, padding {p}, dilation {d}"


def draw(rng, cfg, dtype="float64"):
    n, h, w, c_in, c_out, kh, kw, s, p, d = cfg
    x = rng.standard_normal((n, h, w, c_in)).astype(dtype)
    k = rng.standard_normal((kh, kw, c_in, c_out)).astype(dtype)
    g = rng.standard_normal((n, out_size(h, kh, s, p, d), out_size(w, kw, s, p, d), c_out)).astype(dtype)
    return x, k, g


def attrs(cfg):
    return {"stride": cfg[7], "padding": cfg[8], "dilation": cfg[9]}


# (N, H, W, C_in, C_out, KH, KW, stride, padding, dilation)
FORWARD_CONFIGS = [
    pytest.param((2, 7, 9, 3, 4, 3, 3, 1, 0, 1), id="odd-7x9-valid"),
    pytest.param((1, 6, 5, 2, 3, 1, 1, 1, 0, 1), id="1x1-kernel"),
    pytest.param((2, 9, 7, 2, 3, 5, 5, 1, 2, 1), id="5x5-same-padding"),
    pytest.param((1, 7, 9, 2, 2, 3, 2, 2, 1, 1), id="3x2-kernel-stride2"),
    pytest.param((2, 10, 11, 3, 2, 3, 3, 3, 1, 1), id="stride3"),
    pytest.param((1, 9, 10, 2, 3, 3, 3, 1, 0, 2), id="dilation2"),
    pytest.param((1, 10, 9, 2, 2, 3, 3, 2, 2, 2), id="stride2-padding2-dilation2"),
    pytest.param((1, 5, 6, 2, 3, 2, 2, 1, 3, 1), id="padding-larger-than-kernel"),
    pytest.param((1, 6, 6, 16, 12, 3, 3, 1, 1, 1), id="many-channels"),
    pytest.param((2, 6, 7, 3, 2, 2, 3, 2, 0, 1), id="2x3-kernel-floor"),
]


# ----------------------------------------------------------------------------- conv_im2col_forward
@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("conv_im2col_forward"))
                                 for p in FORWARD_CONFIGS])
def test_im2col_forward_matches_torch(student, rng, cfg):
    """Conv.compute on unseen shapes: odd sizes, 1x1 and 5x5, non-square kernels, stride, dilation, large padding"""
    x, k, _ = draw(rng, cfg)
    got = student.forward("Conv", attrs(cfg), x, k)
    expect_close(got, torch_conv_nhwc(x, k, *cfg[7:]), f"Conv.compute, {label(cfg)}", rtol=1e-8, atol=1e-8,
                 dtype="float64")


@pytest.mark.parametrize("cfg", [
    pytest.param((2, 6, 5, 3, 2, 3, 3, 2, 1, 1), id="stride2-pad1", marks=task("conv_im2col_forward")),
    pytest.param((1, 7, 8, 2, 4, 3, 2, 1, 2, 2), id="3x2-dilation2", marks=task("conv_im2col_forward")),
])
def test_im2col_forward_float32(student, rng, cfg):
    """Conv.compute keeps float32 inputs in float32, with the right values"""
    x, k, _ = draw(rng, cfg, "float32")
    got = student.forward("Conv", attrs(cfg), x, k)
    expected = torch_conv_nhwc(x.astype(np.float64), k.astype(np.float64), *cfg[7:])
    expect_close(got, expected, f"Conv.compute in float32, {label(cfg)}", rtol=1e-4, atol=1e-4, dtype="float32")


@task("conv_im2col_forward")
def test_im2col_forward_asymmetric_integer_kernel(student):
    """Conv.compute is a cross-correlation: an asymmetric integer kernel is not flipped"""
    x = np.arange(2 * 5 * 6 * 2, dtype=np.float64).reshape(2, 5, 6, 2) % 7
    k = np.arange(1.0, 13.0).reshape(3, 2, 2, 1)   # 3 x 2 taps, 2 input channels, all different
    got = student.forward("Conv", {"stride": 1, "padding": 0, "dilation": 1}, x, k)
    expect_close(got, torch_conv_nhwc(x, k, 1, 0, 1), "Conv.compute with the 3 x 2 kernel 1..12 (no flip)",
                 rtol=1e-12, atol=1e-12)


@task("conv_im2col_forward")
def test_im2col_forward_through_ops_conv(student, rng):
    """ops.conv on Tensors uses Conv.compute (stride 2, padding 1, 4 x 4 kernel)"""
    cfg = (2, 9, 8, 2, 3, 4, 4, 2, 1, 1)
    x, k, _ = draw(rng, cfg)
    got = student.call("course_lib.ops:conv", x, k, as_tensors=True, stride=2, padding=1, dilation=1)
    expect_close(got, torch_conv_nhwc(x, k, 2, 1, 1), f"ops.conv, {label(cfg)}", rtol=1e-8, atol=1e-8)


# ----------------------------------------------------------------------------- conv_backward
BACKWARD_CONFIGS = [
    pytest.param((2, 5, 5, 2, 3, 3, 3, 1, 0, 1), id="3x3-valid"),
    pytest.param((2, 7, 9, 2, 2, 3, 3, 1, 1, 1), id="odd-7x9-padding1"),
    pytest.param((1, 6, 7, 2, 3, 5, 5, 1, 2, 1), id="5x5-padding2"),
    pytest.param((1, 5, 6, 3, 2, 1, 1, 1, 2, 1), id="1x1-padding2"),
    pytest.param((2, 7, 6, 2, 2, 3, 3, 2, 1, 1), id="stride2-padding1"),
    pytest.param((1, 8, 8, 2, 2, 3, 3, 3, 0, 1), id="stride3-unused-pixels"),
    # Rows no window reaches, (H + 2p - d(K-1) - 1) mod s, against the padding p: more than p in H
    # and exactly p in W; then fewer than p in H and exactly p in W (the kernel gradient's crop).
    pytest.param((1, 9, 8, 2, 2, 3, 3, 3, 1, 1), id="stride3-padding1-unused-beyond-padding"),
    pytest.param((1, 9, 10, 2, 2, 3, 3, 3, 2, 1), id="stride3-padding2-unused-within-padding"),
    # ... and beyond the padding in W only: exactly p in H, then fewer than p in H.
    pytest.param((1, 8, 9, 2, 2, 3, 3, 3, 1, 1), id="stride3-padding1-unused-beyond-padding-in-W"),
    pytest.param((1, 8, 10, 2, 2, 3, 3, 4, 2, 1), id="stride4-padding2-unused-beyond-padding-in-W"),
    pytest.param((1, 10, 8, 2, 2, 3, 3, 4, 2, 1), id="stride4-padding2-unused-beyond-padding-in-H"),
    pytest.param((1, 7, 9, 2, 3, 3, 2, 2, 1, 1), id="3x2-kernel-stride2"),
    pytest.param((1, 6, 5, 2, 2, 2, 3, 1, 0, 1), id="2x3-kernel"),
    pytest.param((1, 9, 8, 2, 2, 3, 3, 1, 2, 2), id="dilation2-padding2"),
    pytest.param((1, 10, 9, 2, 2, 3, 3, 2, 1, 2), id="dilation2-stride2"),
    pytest.param((1, 4, 5, 2, 2, 3, 3, 1, 3, 1), id="padding3-larger-than-K-1"),
    pytest.param((1, 5, 5, 12, 10, 3, 3, 1, 1, 1), id="many-channels"),
]


@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("conv_backward"))
                                 for p in BACKWARD_CONFIGS])
def test_conv_gradient_of_input(student, rng, cfg):
    """Conv.gradient: the input's gradient, on unseen strides, paddings, dilations and kernel shapes"""
    x, k, g = draw(rng, cfg)
    grads = student.gradient("Conv", attrs(cfg), [x, k], g)
    _, dx, _ = torch_conv_nhwc(x, k, *cfg[7:], g=g)
    expect_close(grads[0], dx, f"Conv.gradient, input gradient, {label(cfg)}", rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("conv_backward"))
                                 for p in BACKWARD_CONFIGS])
def test_conv_gradient_of_kernel(student, rng, cfg):
    """Conv.gradient: the kernel's gradient (summed over the batch), on unseen configurations"""
    x, k, g = draw(rng, cfg)
    grads = student.gradient("Conv", attrs(cfg), [x, k], g)
    _, _, dw = torch_conv_nhwc(x, k, *cfg[7:], g=g)
    expect_close(grads[1], dw, f"Conv.gradient, kernel gradient, {label(cfg)}", rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cfg", [
    pytest.param((3, 6, 7, 2, 3, 3, 3, 2, 1, 1), id="batch3-stride2", marks=task("conv_backward")),
    pytest.param((2, 9, 7, 3, 2, 3, 2, 3, 2, 1), id="3x2-stride3-padding2", marks=task("conv_backward")),
    pytest.param((2, 8, 9, 2, 2, 2, 2, 2, 1, 2), id="2x2-dilation2-stride2", marks=task("conv_backward")),
])
def test_conv_backward_through_reverse_mode(student, rng, cfg):
    """ops.conv(x, w).backward(g) gives torch's gradients for x and w"""
    x, k, g = draw(rng, cfg)
    result = student.call("course_lib.ops:conv", x, k, as_tensors=True, out_grad=g,
                          stride=cfg[7], padding=cfg[8], dilation=cfg[9])
    _, dx, dw = torch_conv_nhwc(x, k, *cfg[7:], g=g)
    assert result["grads"][0] is not None and result["grads"][1] is not None, (
        f"ops.conv(...).backward(g), {label(cfg)}: an input got no gradient")
    expect_close(result["grads"][0], dx, f"x.grad after ops.conv(...).backward(g), {label(cfg)}", rtol=1e-8, atol=1e-8)
    expect_close(result["grads"][1], dw, f"w.grad after ops.conv(...).backward(g), {label(cfg)}", rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cfg", [
    pytest.param((2, 6, 5, 2, 3, 3, 3, 2, 1, 1), id="stride2-pad1", marks=task("conv_backward")),
    pytest.param((1, 7, 6, 2, 2, 3, 2, 1, 0, 2), id="3x2-dilation2", marks=task("conv_backward")),
])
def test_conv_gradient_float32(student, rng, cfg):
    """Conv.gradient in float32: float32 gradients with the right values"""
    x, k, g = draw(rng, cfg, "float32")
    grads = student.gradient("Conv", attrs(cfg), [x, k], g)
    _, dx, dw = torch_conv_nhwc(x.astype(np.float64), k.astype(np.float64), *cfg[7:], g=g.astype(np.float64))
    expect_close(grads[0], dx, f"Conv.gradient in float32, input gradient, {label(cfg)}", rtol=1e-4, atol=1e-4,
                 dtype="float32")
    expect_close(grads[1], dw, f"Conv.gradient in float32, kernel gradient, {label(cfg)}", rtol=1e-4, atol=1e-4,
                 dtype="float32")


# ----------------------------------------------------------------------------- conv_naive_backward
# (N, C_in, H, W, C_out, KH, KW, stride, padding, dilation)
NAIVE_CONFIGS = [
    pytest.param((2, 2, 5, 6, 3, 3, 3, 1, 1, 1), id="3x3-padding1"),
    pytest.param((1, 2, 7, 9, 2, 3, 2, 2, 1, 1), id="odd-7x9-3x2-kernel-stride2"),
    pytest.param((2, 1, 7, 6, 2, 3, 3, 3, 0, 1), id="stride3-unused-pixels"),
    pytest.param((1, 2, 8, 7, 2, 3, 3, 1, 0, 2), id="dilation2"),
    pytest.param((1, 1, 4, 5, 2, 2, 2, 1, 2, 1), id="padding-larger-than-K-1"),
    pytest.param((2, 3, 5, 5, 2, 1, 1, 2, 1, 1), id="1x1-kernel-stride2"),
    pytest.param((1, 2, 8, 8, 2, 3, 3, 2, 2, 2), id="stride2-padding2-dilation2"),
]


def naive_case(rng, cfg):
    n, c_in, h, w, c_out, kh, kw, s, p, d = cfg
    a = rng.standard_normal((n, c_in, h, w))
    k = rng.standard_normal((c_out, c_in, kh, kw))
    dz = rng.standard_normal((n, c_out, out_size(h, kh, s, p, d), out_size(w, kw, s, p, d)))
    a_pad = np.pad(a, ((0, 0), (0, 0), (p, p), (p, p)))
    _, da, dw, _ = torch_conv_nchw(a, k, s, p, d, dz)
    what = (f"naive.conv2d_backward with input {a.shape} (padded to {a_pad.shape}), kernel {k.shape}, "
            f"stride {s}, padding {p}, dilation {d}")
    return dz, a_pad, k, da, dw, what


def naive_call(student, dz, a_pad, k, cfg):
    result = student.call("course_lib.naive:conv2d_backward", dz, a_pad, k,
                          padding=cfg[8], stride=cfg[7], dilation=cfg[9])
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise AssertionError("naive.conv2d_backward should return the tuple (da, dw, db)")
    return result


@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("conv_naive_backward"))
                                 for p in NAIVE_CONFIGS])
def test_naive_backward_input_gradient(student, rng, cfg):
    """naive.conv2d_backward: da (unpadded input's shape) on unseen configurations"""
    dz, a_pad, k, da, _, what = naive_case(rng, cfg)
    got = naive_call(student, dz, a_pad, k, cfg)
    expect_close(got[0], da, f"da of {what}", rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("conv_naive_backward"))
                                 for p in NAIVE_CONFIGS])
def test_naive_backward_kernel_gradient(student, rng, cfg):
    """naive.conv2d_backward: dw summed over the batch and all positions, on unseen configurations"""
    dz, a_pad, k, _, dw, what = naive_case(rng, cfg)
    got = naive_call(student, dz, a_pad, k, cfg)
    expect_close(got[1], dw, f"dw of {what}", rtol=1e-8, atol=1e-8)


@task("conv_naive_backward")
def test_naive_backward_bias_gradient(student, rng):
    """naive.conv2d_backward: db = dz summed over the batch and positions"""
    for cfg in [(3, 2, 5, 5, 4, 3, 3, 1, 1, 1), (2, 1, 7, 6, 2, 2, 3, 2, 0, 1)]:
        dz, a_pad, k, _, _, what = naive_case(rng, cfg)
        got = naive_call(student, dz, a_pad, k, cfg)
        expect_close(got[2], dz.sum(axis=(0, 2, 3)), f"db of {what}", rtol=1e-10, atol=1e-10)


@task("conv_naive_backward")
def test_naive_backward_zero_upstream(student, rng):
    """naive.conv2d_backward: a zero dz gives zero gradients of the right shapes"""
    dz = np.zeros((2, 3, 3, 3))
    a_pad = rng.standard_normal((2, 2, 7, 8))
    k = rng.standard_normal((3, 2, 3, 3))
    da, dw, db = naive_call(student, dz, a_pad, k, (0, 0, 0, 0, 0, 0, 0, 2, 1, 1))
    for name, value, shape in (("da", da, (2, 2, 5, 6)), ("dw", dw, k.shape), ("db", db, (3,))):
        expect_close(value, np.zeros(shape), f"{name} for dz = 0 (input padded by 1 to (2, 2, 7, 8), stride 2)")


@task("conv_naive_backward")
def test_naive_backward_rejects_incompatible_shapes(student, rng):
    """naive.conv2d_backward computes a valid case and raises on a dz, input or kernel that do not fit"""
    cfg = (1, 2, 5, 5, 2, 3, 3, 1, 0, 1)
    dz, a_pad, k, da, _, what = naive_case(rng, cfg)
    expect_close(naive_call(student, dz, a_pad, k, cfg)[0], da, f"da of {what}", rtol=1e-8, atol=1e-8)
    wrong = [
        ("dz with 3 channels for a kernel with 2 output channels", rng.standard_normal((1, 3, 3, 3)), a_pad, k),
        ("dz with batch 2 for an input with batch 1", rng.standard_normal((2, 2, 3, 3)), a_pad, k),
        ("an input with 3 channels for a kernel expecting 2", dz, rng.standard_normal((1, 3, 5, 5)), k),
    ]
    for description, dz_, a_, k_ in wrong:
        with pytest.raises(StudentError):
            student.call("course_lib.naive:conv2d_backward", dz_, a_, k_, padding=0, stride=1, dilation=1)
            raise AssertionError(f"naive.conv2d_backward accepted {description}: it should raise an error")


# ----------------------------------------------------------------------------- nn_conv
# (C_in, C_out, kernel_size, stride, N, H, W, dtype)
NN_CONFIGS = [
    pytest.param((3, 4, 3, 1, 2, 7, 9, "float64"), id="3x3-odd-input"),
    pytest.param((2, 5, 5, 2, 2, 9, 7, "float64"), id="5x5-stride2"),
    pytest.param((1, 3, 1, 1, 2, 5, 6, "float64"), id="1x1"),
    pytest.param((2, 3, 2, 1, 1, 6, 5, "float64"), id="even-kernel"),
    pytest.param((2, 3, 4, 2, 1, 7, 8, "float64"), id="even-kernel-stride2"),
    pytest.param((3, 2, 3, 2, 2, 7, 6, "float32"), id="float32-stride2"),
]


def nn_case(rng, cfg):
    c_in, c_out, k, s, n, h, w, dtype = cfg
    x = rng.standard_normal((n, c_in, h, w)).astype(dtype)
    weight = rng.standard_normal((k, k, c_in, c_out)).astype(dtype)
    bias = rng.standard_normal(c_out).astype(dtype)
    p = k // 2
    out_shape = (n, c_out, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1)
    g = rng.standard_normal(out_shape).astype(dtype)
    out, _, _, db = torch_conv_nchw(x.astype(np.float64), oihw(weight.astype(np.float64)), s, p, 1,
                                    g.astype(np.float64), bias.astype(np.float64))
    what = f"nn.Conv({c_in}, {c_out}, {k}, stride={s}) on x {x.shape} {dtype}"
    tol = 1e-4 if dtype == "float32" else 1e-8
    return (c_in, c_out, k, s, weight, bias, x, g), out, db, what, tol


@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("nn_conv", weight=2))
                                 for p in NN_CONFIGS])
def test_nn_conv_forward(student, rng, cfg):
    """nn.Conv.forward: NCHW in and out, 'same' padding kernel_size // 2, stride, bias"""
    args, out, _, what, tol = nn_case(rng, cfg)
    # forward only (no out_grad): no backward to fail first
    result = as_mapping(student.request("nn_conv", *args[:-1], None), what, ("out",))
    expect_close(result["out"], out, f"{what}: output", rtol=tol, atol=tol, dtype=cfg[7])


@pytest.mark.parametrize("cfg", [pytest.param(*NN_CONFIGS[i].values, id=NN_CONFIGS[i].id, marks=task("nn_conv"))
                                 for i in (0, 4)])
def test_nn_conv_bias_gradient(student, rng, cfg):
    """nn.Conv.forward adds the bias with ops, so the bias gets its gradient"""
    args, _, db, what, tol = nn_case(rng, cfg)
    result = as_mapping(student.request("nn_conv", *args), f"{what} after backward(g)", ("bias",))
    expect_close(result["bias"], db, f"{what}: bias gradient after backward(g)", rtol=tol, atol=tol)


# ----------------------------------------------------------------------------- conv_worked_example
HAND_COMPUTATION = "redo the hand computation with the formulas of section 2"


@task("conv_worked_example")
def test_worked_example_kernel_gradient(student):
    """the worked example: dW of the 3 x 3 input with the 2 x 2 kernel"""
    expect_worked(worked_answer(student, "dW", (2, 2)), np.array([[12.0, 16.0], [24.0, 28.0]]), "dW", HAND_COMPUTATION)


@task("conv_worked_example")
def test_worked_example_input_gradient(student):
    """the worked example: dA of the 3 x 3 input"""
    expect_worked(worked_answer(student, "dA", (3, 3)), np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]),
                  "dA", HAND_COMPUTATION)


# ----------------------------------------------------------------------------- conv_fixed_backward
# The find-the-bugs listing fixed: only the student's fixed_input_gradient runs (NumPy and the given
# naive.conv2d_forward), so no other task is lent. Shapes are small: the suite stays cheap.
FIXED_CONFIGS = [  # (N, C_in, H, W, C_out, KH, KW, stride, padding)
    pytest.param((2, 3, 6, 6, 2, 3, 3, 2, 1), id="stride2-padding1"),
    pytest.param((1, 2, 7, 6, 3, 3, 2, 2, 1), id="non-square-kernel-stride2-padding1"),
    pytest.param((2, 2, 7, 8, 2, 2, 3, 3, 0), id="stride3-unused-rows-and-columns"),
    pytest.param((1, 1, 5, 4, 2, 1, 2, 2, 2), id="padding-larger-than-K-1"),
    pytest.param((1, 2, 5, 5, 1, 3, 3, 1, 0), id="stride1-padding0"),
    # stride 3 with padding: the unused rows (8 + 2 - 2) % 3 and columns (7 + 2 - 2) % 3 differ from
    # what h - 2p or + kw would give, which strides 1 and 2 cannot tell apart; C_in 4 > KW 2 catches
    # a bias sized by the wrong axis of the swapped kernel.
    pytest.param((1, 4, 8, 7, 2, 2, 2, 3, 1), id="stride3-padding1-more-channels-than-kernel-columns"),
]


@pytest.mark.parametrize("cfg", [pytest.param(*p.values, id=p.id, marks=task("conv_fixed_backward"))
                                 for p in FIXED_CONFIGS])
def test_fixed_input_gradient_matches_torch(student, rng, cfg):
    """fixed_input_gradient (the find-the-bugs listing, fixed) on unseen shapes, against PyTorch"""
    n, c_in, h, w, c_out, kh, kw, s, p = cfg
    a = rng.standard_normal((n, c_in, h, w))
    k = rng.standard_normal((c_out, c_in, kh, kw))
    dz = rng.standard_normal((n, c_out, out_size(h, kh, s, p, 1), out_size(w, kw, s, p, 1)))
    _, da, _, _ = torch_conv_nchw(a, k, s, p, 1, dz)
    got = student.call("student:fixed_input_gradient", dz, k, input_hw=[h, w], stride=s, padding=p)
    expect_close(got, da, f"fixed_input_gradient with input {a.shape}, kernel {k.shape}, stride {s}, padding {p}",
                 rtol=1e-8, atol=1e-8)
