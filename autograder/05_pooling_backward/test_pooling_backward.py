"""Hidden checks of 05_pooling_backward: max and average pooling, forward and backward, against
PyTorch (CPU, float64; NCHW) on shapes, strides and paddings the notebook never used: overlapping
windows, padding (-inf for max, counted zeros for average), ties (integer inputs: the whole
gradient goes to the first maximum in row-major order, as in PyTorch), all-negative inputs.

The backward passes are reached through ``MaxPool2d.gradient`` / ``AvgPool2d.gradient`` (which
build MaxPool2dBackward / AvgPool2dBackward and run their compute) and through reverse mode; the
two pieces they call, the first-maximum mask and col2im, are graded on their own (FirstMaxMask
against PyTorch's argmax indices, Col2Im against ``torch.nn.functional.fold``), and lent by the
grader to the other tasks' checks (lends.py).
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_tools.grading.api import expect_close, expect_worked, nchw, nhwc, task, worked_answer

torch.set_num_threads(1)


def torch_pool(kind, x, k, s, p, g=None):
    """PyTorch's pooling of NHWC x (float64): the output, or with g the input's gradient."""
    xt = torch.tensor(nchw(x.astype(np.float64)), requires_grad=True)
    pool = F.max_pool2d if kind == "max" else F.avg_pool2d
    out = pool(xt, k, stride=k if s is None else s, padding=p)
    if g is None:
        return nhwc(out.detach().numpy())
    out.backward(torch.tensor(nchw(g.astype(np.float64))))
    return nhwc(xt.grad.numpy())


def out_shape(shape, k, s, p):
    s = k if s is None else s
    n, h, w, c = shape
    return (n, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1, c)


MAX_BACKWARD = "MaxPool2d.gradient -> MaxPool2dBackward.compute"
AVG_BACKWARD = "AvgPool2d.gradient -> AvgPool2dBackward.compute"


def attrs(k, s, p):
    return {"kernel_size": k, "stride": s, "padding": p}


def describe(op, k, s, p, shape, kind=""):
    return f"{op}(kernel_size={k}, stride={s}, padding={p}) on {kind + ' ' if kind else ''}input {shape}"


# (input shape NHWC, kernel, stride (None: = kernel), padding)
CASES = [
    pytest.param(((2, 6, 6, 3), 2, None, 0), id="2x2-default-stride"),
    pytest.param(((1, 7, 7, 2), 3, 2, 1), id="3x3-s2-p1-overlap"),
    pytest.param(((2, 6, 5, 3), 3, 1, 1), id="3x3-s1-p1-heavy-overlap"),
    pytest.param(((1, 5, 8, 2), 2, 1, 0), id="2x2-s1-overlap"),
    pytest.param(((1, 9, 9, 1), 4, 3, 2), id="4x4-s3-p2"),
    pytest.param(((1, 7, 8, 2), 3, 3, 0), id="floor-drops-rows"),
    pytest.param(((1, 5, 5, 2), 1, 2, 0), id="1x1-subsample"),
    pytest.param(((2, 8, 7, 1), 5, 2, 2), id="5x5-s2-p2"),
    pytest.param(((1, 3, 4, 2), 3, None, 1), id="3x3-default-stride-p1"),
]
PADDED_CASES = [c for c in CASES if c.values[0][3] > 0]


def draw(rng, kind, shape):
    if kind == "random":
        return rng.standard_normal(shape)
    if kind == "ties":
        return rng.integers(0, 3, shape).astype(np.float64)
    if kind == "constant":
        return np.full(shape, 1.5)
    if kind == "negative":
        return -1.0 - rng.random(shape)
    if kind == "minus-infinity":  # padding must be -inf itself: the lowest finite number would win here
        return np.where(rng.random(shape) < 0.5, -np.inf, -1.0 - rng.random(shape))
    raise ValueError(kind)


def upstream(rng, shape, k, s, p, dtype="float64"):
    """An integer-valued upstream gradient (exact sums: ties are judged exactly)."""
    return rng.integers(-4, 5, out_shape(shape, k, s, p)).astype(dtype)


def cases_with(task_id, kinds, cases=CASES, weight=1.0):
    return [pytest.param(c.values[0], kind, id=f"{c.id}-{kind}", marks=task(task_id, weight=weight))
            for c in cases for kind in kinds]


# ----------------------------------------------------------------------------- maxpool_forward
@pytest.mark.parametrize("case,kind", cases_with("maxpool_forward", ["random", "ties"]))
def test_maxpool_forward_matches_torch(student, rng, case, kind):
    """MaxPool2d.compute on unseen shapes: default stride, overlap, padding, floor, 1x1, ties"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    got = student.forward("MaxPool2d", attrs(k, s, p), x)
    expect_close(got, torch_pool("max", x, k, s, p), describe("MaxPool2d.compute", k, s, p, shape, kind),
                 rtol=1e-12, atol=0, dtype="float64")


@pytest.mark.parametrize("case,kind", cases_with("maxpool_forward", ["negative", "minus-infinity"], PADDED_CASES))
def test_maxpool_forward_pads_with_minus_infinity(student, rng, case, kind):
    """MaxPool2d.compute on all-negative inputs (-inf too) with padding: padding never wins the maximum"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    got = student.forward("MaxPool2d", attrs(k, s, p), x)
    expect_close(got, torch_pool("max", x, k, s, p), describe("MaxPool2d.compute", k, s, p, shape, "all-negative"),
                 rtol=1e-12, atol=0)


@task("maxpool_forward")
def test_maxpool_forward_float32(student, rng):
    """MaxPool2d.compute keeps float32"""
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    got = student.forward("MaxPool2d", attrs(3, 2, 1), x)
    expect_close(got, torch_pool("max", x, 3, 2, 1), describe("MaxPool2d.compute", 3, 2, 1, x.shape, "float32"),
                 rtol=1e-6, atol=0, dtype="float32")


# ----------------------------------------------------------------------------- maxpool_mask
def torch_first_max_mask(x, k, s, p):
    """The mask of each window's first maximum, from the indices PyTorch's max pooling returns (the
    position in the unpadded input of the maximum it routes to): (N, H_out, W_out, k*k, C)."""
    s = k if s is None else s
    n, h, w, c = x.shape
    _, indices = F.max_pool2d(torch.tensor(nchw(x.astype(np.float64))), k, stride=s, padding=p,
                              return_indices=True)
    indices = nhwc(indices.numpy())                                    # (N, H_out, W_out, C), row * W + col
    h_out, w_out = indices.shape[1:3]
    u = indices // w + p - (np.arange(h_out) * s)[None, :, None, None]   # row inside the window
    v = indices % w + p - (np.arange(w_out) * s)[None, None, :, None]    # column inside the window
    slot = u * k + v
    return (np.arange(k * k)[None, None, None, :, None] == slot[:, :, :, None, :]).astype(np.float64)


@pytest.mark.parametrize("case,kind", cases_with("maxpool_mask", ["random", "ties", "constant"]))
def test_first_max_mask_matches_torch(student, rng, case, kind):
    """FirstMaxMask.compute: one 1 per window, at the first maximum in row-major order (PyTorch's choice)"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    got = student.forward("FirstMaxMask", attrs(k, s, p), x)
    expect_close(got, torch_first_max_mask(x, k, s, p), describe("FirstMaxMask.compute", k, s, p, shape, kind),
                 rtol=0, atol=0, dtype="float64")


@pytest.mark.parametrize("case,kind", cases_with("maxpool_mask", ["negative"], PADDED_CASES))
def test_first_max_mask_never_chooses_padding(student, rng, case, kind):
    """FirstMaxMask.compute on all-negative inputs with padding: the padding is never the maximum"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    got = student.forward("FirstMaxMask", attrs(k, s, p), x)
    expect_close(got, torch_first_max_mask(x, k, s, p),
                 describe("FirstMaxMask.compute", k, s, p, shape, "all-negative"), rtol=0, atol=0)


@task("maxpool_mask")
def test_first_max_mask_float32(student, rng):
    """FirstMaxMask.compute returns the input's dtype float32"""
    x = rng.integers(0, 3, (1, 7, 6, 3)).astype(np.float32)
    got = student.forward("FirstMaxMask", attrs(3, 2, 1), x)
    expect_close(got, torch_first_max_mask(x, 3, 2, 1), describe("FirstMaxMask.compute", 3, 2, 1, x.shape, "float32"),
                 rtol=0, atol=0, dtype="float32")


# ----------------------------------------------------------------------------- pool_col2im
def torch_col2im(columns, in_shape, k, s, p):
    """torch.nn.functional.fold of NHWC windows (N, H_out, W_out, k*k, C) -> (N, H, W, C)."""
    s = k if s is None else s
    n, h, w, c = in_shape
    _, h_out, w_out, kk, _ = columns.shape
    blocks = np.transpose(columns.astype(np.float64), (0, 4, 3, 1, 2)).reshape(n, c * kk, h_out * w_out)
    out = F.fold(torch.tensor(blocks), (h, w), k, stride=s, padding=p)
    return nhwc(out.numpy())


def col2im_attrs(shape, k, s, p):
    return {"in_shape": list(shape), **attrs(k, s, p)}


def windows_shape(shape, k, s, p):
    n, h_out, w_out, c = out_shape(shape, k, s, p)
    return (n, h_out, w_out, k * k, c)


@pytest.mark.parametrize("case", [pytest.param(c.values[0], id=c.id, marks=task("pool_col2im")) for c in CASES])
def test_col2im_matches_torch_fold(student, rng, case):
    """Col2Im.compute: every window added back onto its input positions, overlaps summed, padding cropped"""
    shape, k, s, p = case
    columns = rng.standard_normal(windows_shape(shape, k, s, p))
    got = student.forward("Col2Im", col2im_attrs(shape, k, s, p), columns)
    expect_close(got, torch_col2im(columns, shape, k, s, p),
                 f"Col2Im(in_shape={shape}, kernel_size={k}, stride={s}, padding={p}).compute",
                 rtol=1e-10, atol=1e-12, dtype="float64")


@task("pool_col2im")
def test_col2im_counts_overlapping_windows(student):
    """Col2Im.compute of all-ones windows: each element receives the number of windows covering it"""
    shape, k, s, p = (1, 9, 8, 2), 3, 1, 1
    columns = np.ones(windows_shape(shape, k, s, p))
    got = student.forward("Col2Im", col2im_attrs(shape, k, s, p), columns)
    expect_close(got, torch_col2im(columns, shape, k, s, p),
                 f"Col2Im(in_shape={shape}, kernel_size=3, stride=1, padding=1).compute of all-ones windows "
                 f"(up to 9 windows per element)", rtol=0, atol=0)


@task("pool_col2im")
def test_col2im_float32(student, rng):
    """Col2Im.compute keeps float32"""
    shape, k, s, p = (2, 7, 6, 3), 3, 2, 1
    columns = rng.standard_normal(windows_shape(shape, k, s, p)).astype(np.float32)
    got = student.forward("Col2Im", col2im_attrs(shape, k, s, p), columns)
    expect_close(got, torch_col2im(columns, shape, k, s, p), f"Col2Im(in_shape={shape}, 3, 2, 1).compute in float32",
                 rtol=1e-5, atol=1e-6, dtype="float32")


# ----------------------------------------------------------------------------- maxpool_backward
@pytest.mark.parametrize("case,kind", cases_with("maxpool_backward", ["random", "ties", "constant"]))
def test_maxpool_backward_matches_torch(student, rng, case, kind):
    """MaxPool2dBackward.compute: each window's gradient to its first maximum, added up over overlapping windows"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    g = upstream(rng, shape, k, s, p)
    got = student.gradient("MaxPool2d", attrs(k, s, p), [x], g)[0]
    expect_close(got, torch_pool("max", x, k, s, p, g), describe(MAX_BACKWARD, k, s, p, shape, kind),
                 rtol=1e-12, atol=1e-12, dtype="float64")


@pytest.mark.parametrize("case,kind", cases_with("maxpool_backward", ["negative"], PADDED_CASES))
def test_maxpool_backward_all_negative_with_padding(student, rng, case, kind):
    """MaxPool2dBackward.compute on all-negative inputs with padding: no gradient is lost to the padding"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    g = upstream(rng, shape, k, s, p)
    got = student.gradient("MaxPool2d", attrs(k, s, p), [x], g)[0]
    expect_close(got, torch_pool("max", x, k, s, p, g),
                 describe(MAX_BACKWARD, k, s, p, shape, "all-negative"), rtol=1e-12, atol=1e-12)


@task("maxpool_backward")
def test_maxpool_backward_tie_rule(student):
    """MaxPool2dBackward.compute with tied maxima: the whole gradient goes to the first one (row-major)"""
    # one 2 x 2 window per channel; channel c has its maxima at different positions
    windows = np.array([[[2.0, 2.0], [2.0, 2.0]], [[0.0, 3.0], [3.0, 3.0]], [[1.0, 0.0], [4.0, 4.0]],
                        [[-1.0, -3.0], [-3.0, -1.0]]])                       # (C, 2, 2)
    x = np.transpose(windows, (1, 2, 0))[None]                                 # (1, 2, 2, 4)
    g = np.array([5.0, 7.0, 3.0, 2.0]).reshape(1, 1, 1, 4)
    got = student.gradient("MaxPool2d", attrs(2, None, 0), [x], g)[0]
    expect_close(got, torch_pool("max", x, 2, None, 0, g),
                 f"{MAX_BACKWARD} (kernel_size=2) on four 2 x 2 windows with tied maxima (one per channel)")


@task("maxpool_backward")
def test_maxpool_backward_through_reverse_mode(student, rng):
    """ops.max_pool2d(x, 3, stride=1, padding=1).backward(g) on an integer input with ties"""
    x = rng.integers(0, 4, (2, 5, 6, 2)).astype(np.float64)
    g = rng.standard_normal((2, 5, 6, 2))
    result = student.call("course_lib.ops:max_pool2d", x, as_tensors=True, out_grad=g, kernel_size=3, stride=1,
                          padding=1)
    assert result["grads"][0] is not None, "x got no gradient from max_pool2d(x).backward(g)"
    expect_close(result["grads"][0], torch_pool("max", x, 3, 1, 1, g),
                 "x.grad after ops.max_pool2d(x, 3, stride=1, padding=1).backward(g), x of shape (2, 5, 6, 2)",
                 rtol=1e-10, atol=1e-12)


@task("maxpool_backward")
def test_maxpool_backward_float32(student, rng):
    """MaxPool2dBackward.compute returns float32 for float32 inputs"""
    x = rng.standard_normal((1, 6, 7, 2)).astype(np.float32)
    g = upstream(rng, x.shape, 3, 2, 1, "float32")
    got = student.gradient("MaxPool2d", attrs(3, 2, 1), [x], g)[0]
    expect_close(got, torch_pool("max", x, 3, 2, 1, g), describe(MAX_BACKWARD, 3, 2, 1, x.shape, "float32"),
                 rtol=1e-6, atol=1e-6, dtype="float32")


# ----------------------------------------------------------------------------- avgpool_forward
@pytest.mark.parametrize("case,kind", cases_with("avgpool_forward", ["random", "ties"]))
def test_avgpool_forward_matches_torch(student, rng, case, kind):
    """AvgPool2d.compute on unseen shapes: divisor k*k, padded zeros counted, overlap, floor"""
    shape, k, s, p = case
    x = draw(rng, kind, shape)
    got = student.forward("AvgPool2d", attrs(k, s, p), x)
    expect_close(got, torch_pool("avg", x, k, s, p), describe("AvgPool2d.compute", k, s, p, shape,
                                                               "integer" if kind == "ties" else kind),
                 rtol=1e-10, atol=1e-12, dtype="float64")


@task("avgpool_forward")
def test_avgpool_forward_float32(student, rng):
    """AvgPool2d.compute keeps float32"""
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    got = student.forward("AvgPool2d", attrs(3, 2, 1), x)
    expect_close(got, torch_pool("avg", x, 3, 2, 1), describe("AvgPool2d.compute", 3, 2, 1, x.shape, "float32"),
                 rtol=1e-5, atol=1e-6, dtype="float32")


# ----------------------------------------------------------------------------- avgpool_backward
@pytest.mark.parametrize("case", [pytest.param(c.values[0], id=c.id, marks=task("avgpool_backward")) for c in CASES])
def test_avgpool_backward_matches_torch(student, rng, case):
    """AvgPool2dBackward.compute: g / k**2 to every element of each window, overlap added, padding cropped"""
    shape, k, s, p = case
    g = rng.standard_normal(out_shape(shape, k, s, p))
    x = rng.standard_normal(shape)
    got = student.gradient("AvgPool2d", attrs(k, s, p), [x], g)[0]
    expect_close(got, torch_pool("avg", x, k, s, p, g),
                 describe(AVG_BACKWARD, k, s, p, shape), rtol=1e-10, atol=1e-12, dtype="float64")


@task("avgpool_backward")
def test_avgpool_backward_through_reverse_mode(student, rng):
    """ops.avg_pool2d(x, 4, stride=2, padding=2).backward(g)"""
    x = rng.standard_normal((2, 7, 5, 2))
    g = rng.standard_normal(out_shape(x.shape, 4, 2, 2))
    result = student.call("course_lib.ops:avg_pool2d", x, as_tensors=True, out_grad=g, kernel_size=4, stride=2,
                          padding=2)
    assert result["grads"][0] is not None, "x got no gradient from avg_pool2d(x).backward(g)"
    expect_close(result["grads"][0], torch_pool("avg", x, 4, 2, 2, g),
                 "x.grad after ops.avg_pool2d(x, 4, stride=2, padding=2).backward(g), x of shape (2, 7, 5, 2)",
                 rtol=1e-10, atol=1e-12)


@task("avgpool_backward")
def test_avgpool_backward_float32(student, rng):
    """AvgPool2dBackward.compute returns float32 for a float32 out_grad"""
    shape = (1, 6, 7, 2)
    g = rng.standard_normal(out_shape(shape, 3, 2, 1)).astype(np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    got = student.gradient("AvgPool2d", attrs(3, 2, 1), [x], g)[0]
    expect_close(got, torch_pool("avg", x, 3, 2, 1, g),
                 describe(AVG_BACKWARD, 3, 2, 1, shape, "float32"), rtol=1e-5, atol=1e-6, dtype="float32")


# ----------------------------------------------------------------------------- pooling_worked_example
@task("pooling_worked_example")
def test_worked_example_max(student):
    """the worked example: the max-pooling gradient of the 2 x 2 window"""
    expect_worked(worked_answer(student, "worked_grad_max", (2, 2)), np.array([[0.0, 6.0], [0.0, 0.0]]), "worked_grad_max",
                  "which element produced the output, and what do the others receive?")


@task("pooling_worked_example")
def test_worked_example_avg(student):
    """the worked example: the average-pooling gradient of the 2 x 2 window"""
    expect_worked(worked_answer(student, "worked_grad_avg", (2, 2)), np.array([[1.5, 1.5], [1.5, 1.5]]), "worked_grad_avg",
                  "what is the derivative of the mean with respect to each element?")
