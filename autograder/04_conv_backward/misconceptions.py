"""Misconceptions of 04_conv_backward, each a wrong implementation written here from its idea.

Layouts as in the hidden suite: course_lib's Conv is NHWC with a (KH, KW, C_in, C_out) kernel;
the naive loops are NCHW with a (C_out, C_in, KH, KW) kernel. PyTorch (float64) computes the
right parts of each wrong answer.
"""
from __future__ import annotations

import numpy as np

from course_tools.grading.api import (Call, Misconception, Probe, forward_call, function_call, gradient_call,
                                      hwio, nchw, nhwc, notebook_place, oihw, request_call, torch_conv_nchw,
                                      torch_conv_nhwc)

NOTEBOOK = "04_conv_backward"
# The staged checks there (conv_backward_stages) show which of the five stages goes wrong.
WHERE_BACKWARD = notebook_place("section 6", NOTEBOOK, "The backward pass, as convolutions",
                                ", and its staged checks")
WHERE_NAIVE = notebook_place("section 4", NOTEBOOK, "The naive loops")


def torch_grads_nchw(x, w, g, stride, padding, dilation):
    """(dx, dw) of PyTorch's conv2d, NCHW / OIHW, float64."""
    return torch_conv_nchw(x, w, stride, padding, dilation, g)[1:3]


def _dilate_hw(g, zeros):
    """``zeros`` zeros inserted after every row and column of NHWC g."""
    n, h, w, c = g.shape
    out = np.zeros((n, h * (zeros + 1), w * (zeros + 1), c), dtype=g.dtype)
    out[:, ::zeros + 1, ::zeros + 1, :] = g
    return out


def _conv_gradient_call(call: Call):
    """(x, k, g, stride, padding, dilation) of a call that reaches Conv.gradient, NHWC, or None."""
    if call.scenario == "gradient" and call.args[0] == "Conv":
        attrs, (x, k), g = call.args[1], call.args[2], call.args[3]
        return x, k, g, attrs.get("stride", 1), attrs.get("padding", 0), attrs.get("dilation", 1)
    if call.scenario == "call" and call.args[0] == "course_lib.ops:conv" and call.args[4] is not None:
        (x, k), kwargs, g = call.args[1], call.args[2], call.args[4]
        return x, k, g, kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("dilation", 1)
    return None


def _as_result(call: Call, dx, dw):
    """The wrong gradients in the shape of the call's result (a list, or {"grads": [...]})."""
    dtype = call.args[2][0].dtype if call.scenario == "gradient" else call.args[1][0].dtype
    dx, dw = dx.astype(dtype), dw.astype(dtype)
    return [dx, dw] if call.scenario == "gradient" else {"grads": [dx, dw]}


def _input_gradient_only(call: Call, dx):
    """The wrong input gradient in the shape of the call's result, the kernel gradient absent."""
    dtype = call.args[2][0].dtype if call.scenario == "gradient" else call.args[1][0].dtype
    dx = dx.astype(dtype)
    return [dx, None] if call.scenario == "gradient" else {"grads": [dx, None]}


def kernel_not_flipped(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    # Correlating with k itself is the right formula applied to the kernel rotated by 180 degrees.
    dx, _ = torch_grads_nchw(nchw(x), oihw(k[::-1, ::-1].copy()), nchw(g), s, p, d)
    _, dw = torch_grads_nchw(nchw(x), oihw(k), nchw(g), s, p, d)
    return _as_result(call, nhwc(dx), hwio(dw))


def padding_ignores_forward_padding(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    if p == 0:
        return None  # the same as the right answer
    # Full padding d(K-1) without taking p off: the gradient of the *padded* input, uncropped.
    x_pad = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    dx, _ = torch_grads_nchw(nchw(x_pad), oihw(k), nchw(g), s, 0, d)
    _, dw = torch_grads_nchw(nchw(x), oihw(k), nchw(g), s, p, d)
    return _as_result(call, nhwc(dx), hwio(dw))


def kernel_gradient_divided_by_batch(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    dx, dw = torch_grads_nchw(nchw(x), oihw(k), nchw(g), s, p, d)
    return _as_result(call, nhwc(dx), hwio(dw) / x.shape[0])


def out_grad_dilated_by_stride(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    if s == 1:
        return None  # the dilation only happens for a stride above 1
    # s zeros between the entries instead of s - 1, cropped to the stride-1 output's size; then the
    # input gradient as it should be (a stride-1 convolution's, for that out_grad). The kernel
    # gradient is left out (None: no evidence): the notebook's recipe builds it from out_grad
    # itself (a convolution at dilation s), where this mistake does not reach.
    h1, w1 = x.shape[1] + 2 * p - d * (k.shape[0] - 1), x.shape[2] + 2 * p - d * (k.shape[1] - 1)
    g_wrong = _dilate_hw(g, s)[:, :h1, :w1, :]
    dx, _ = torch_grads_nchw(nchw(x), oihw(k), nchw(g_wrong), 1, p, d)
    return _input_gradient_only(call, nhwc(dx))


def stride_without_dilation(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    if s == 1:
        return None
    # out_grad used as if it came from a stride-1 convolution: the input gradient is the full
    # correlation of the undilated out_grad with the rotated kernel, too small an image. (The
    # kernel gradient is left out, as above: the recipe reads out_grad itself there.)
    kh, kw = k.shape[:2]
    g_full = np.pad(g, ((0, 0), (d * (kh - 1), d * (kh - 1)), (d * (kw - 1), d * (kw - 1)), (0, 0)))
    dx = torch_conv_nhwc(g_full, np.transpose(k[::-1, ::-1], (0, 1, 3, 2)), dilation=d)
    dx = dx[:, p:dx.shape[1] - p, p:dx.shape[2] - p, :]
    if 0 in dx.shape:
        return None
    return _input_gradient_only(call, dx)


def _naive_call(call: Call):
    if call.scenario == "call" and call.args[0] == "course_lib.naive:conv2d_backward":
        (dz, a_pad, w), kwargs = call.args[1], call.args[2]
        return dz, a_pad, w, kwargs.get("padding", 0), kwargs.get("stride", 1), kwargs.get("dilation", 1)
    return None


def naive_divides_by_batch(call: Call):
    found = _naive_call(call)
    if found is None:
        return None
    dz, a_pad, w, p, s, d = found
    dx_pad, dw = torch_grads_nchw(a_pad, w, dz, s, 0, d)
    h, wd = a_pad.shape[2] - 2 * p, a_pad.shape[3] - 2 * p
    n = dz.shape[0]
    return [dx_pad[:, :, p:p + h, p:p + wd], dw / n, dz.sum(axis=(0, 2, 3)) / n]


def naive_assigns_instead_of_adding(call: Call):
    found = _naive_call(call)
    if found is None:
        return None
    dz, a_pad, w, p, s, d = found
    n, c_out, h_out, w_out = dz.shape
    kh, kw = w.shape[2:]
    da_pad = np.zeros(a_pad.shape)
    for i in range(n):
        for q in range(c_out):
            for r in range(h_out):
                for c in range(w_out):
                    rows = slice(r * s, r * s + d * (kh - 1) + 1, d)
                    cols = slice(c * s, c * s + d * (kw - 1) + 1, d)
                    da_pad[i, :, rows, cols] = dz[i, q, r, c] * w[q]  # the last window written wins
    _, dw = torch_grads_nchw(a_pad, w, dz, s, 0, d)
    h, wd = a_pad.shape[2] - 2 * p, a_pad.shape[3] - 2 * p
    return [da_pad[:, :, p:p + h, p:p + wd], dw, dz.sum(axis=(0, 2, 3))]


def naive_crop_with_negative_slice(call: Call):
    found = _naive_call(call)
    if found is None:
        return None
    dz, a_pad, w, p, s, d = found
    dx_pad, dw = torch_grads_nchw(a_pad, w, dz, s, 0, d)
    # p:-p is the empty slice 0:0 when p = 0 (and right for p > 0)
    return [dx_pad[:, :, p:-p, p:-p], dw, dz.sum(axis=(0, 2, 3))]


def _forward_call(call: Call):
    """(x, k, stride, padding, dilation) of a call that runs Conv.compute, or None."""
    if call.scenario == "forward" and call.args[0] == "Conv":
        attrs, (x, k) = call.args[1], call.args[2]
        return x, k, attrs.get("stride", 1), attrs.get("padding", 0), attrs.get("dilation", 1)
    if call.scenario == "call" and call.args[0] == "course_lib.ops:conv" and call.args[4] is None:
        (x, k), kwargs = call.args[1], call.args[2]
        return x, k, kwargs.get("stride", 1), kwargs.get("padding", 0), kwargs.get("dilation", 1)
    return None


def im2col_ignores_dilation(call: Call):
    found = _forward_call(call)
    if found is None:
        return None
    x, k, s, p, d = found
    if d == 1:
        return None
    # The window view steps one row per kernel tap (strides sh, sw instead of sh*d, sw*d), while the
    # output size is still computed with d: an undilated correlation, cut to the dilated one's size.
    h_out = (x.shape[1] + 2 * p - d * (k.shape[0] - 1) - 1) // s + 1
    w_out = (x.shape[2] + 2 * p - d * (k.shape[1] - 1) - 1) // s + 1
    return torch_conv_nhwc(x, k, s, p, 1)[:, :h_out, :w_out, :].astype(x.dtype)


def im2col_kernel_rows_in_wrong_order(call: Call):
    found = _forward_call(call)
    if found is None:
        return None
    x, k, s, p, d = found
    kh, kw, c_in, c_out = k.shape
    # The kernel flattened channel-first, (C_in, KH, KW) rows, multiplied with windows flattened
    # (KH, KW, C_in): row r of one meets row r of the other, a different (tap, channel) pair.
    mixed = np.transpose(k, (2, 0, 1, 3)).reshape(kh, kw, c_in, c_out)
    return torch_conv_nhwc(x, mixed, s, p, d).astype(x.dtype)


def _nn_conv_call(call: Call):
    if call.scenario == "nn_conv":
        c_in, c_out, ksize, stride, weight, bias, x, _ = call.args
        return ksize, stride, np.asarray(weight), np.asarray(bias), np.asarray(x)
    return None


def nn_conv_valid_padding(call: Call):
    found = _nn_conv_call(call)
    if found is None:
        return None
    ksize, stride, weight, bias, x = found
    out = torch_conv_nhwc(nhwc(x), weight, stride, 0) + bias
    return {"out": nchw(out).astype(x.dtype)}


def nn_conv_layout_by_reshape(call: Call):
    found = _nn_conv_call(call)
    if found is None:
        return None
    ksize, stride, weight, bias, x = found
    n, c, h, w = x.shape
    # reshape keeps the memory order, so "channels last" this way mixes pixels and channels
    out = torch_conv_nhwc(x.reshape(n, h, w, c), weight, stride, ksize // 2) + bias
    return {"out": nchw(out).astype(x.dtype)}


WHERE_IM2COL = notebook_place("section 5", NOTEBOOK, "The forward pass, fast: im2col")
WHERE_NN = notebook_place("section 7", NOTEBOOK, "The layer: nn.Conv")

MISCONCEPTIONS = [
    Misconception(
        "conv_backward", "kernel_not_flipped", "the kernel is not rotated by 180 degrees",
        "Your input gradient correlates out_grad with the kernel as it is. Each input pixel was multiplied by "
        "the kernel tap that sat over it, so the gradient sends out_grad back through the same taps seen from "
        "the other side: the kernel rotated by 180 degrees (flipped along both spatial axes). With a symmetric "
        "kernel the mistake is invisible; with the asymmetric kernels of the hidden checks it is not.",
        WHERE_BACKWARD, kernel_not_flipped),
    Misconception(
        "conv_backward", "padding_ignores_forward_padding", "the full padding d(K-1) ignores the forward padding p",
        "Your input gradient pads out_grad by d(K-1) on each side, which gives the gradient of the *padded* "
        "input: it is 2p rows and columns too large. The forward pass already padded by p, so pad by d(K-1) - p "
        "(or pad fully and crop p from each side).",
        WHERE_BACKWARD, padding_ignores_forward_padding),
    Misconception(
        "conv_backward", "kernel_gradient_divided_by_batch", "the kernel gradient is divided by the batch size",
        "Your kernel gradient is the right sum divided by N. out_grad already carries any 1/N of a mean loss; "
        "the kernel gradient is the plain sum over the batch and all output positions.",
        WHERE_BACKWARD, kernel_gradient_divided_by_batch),
    Misconception(
        "conv_naive_backward", "naive_divides_by_batch", "dw and db are divided by the batch size",
        "Your dw and db are the right sums divided by N. dz is the gradient of the loss itself: any 1/N of a "
        "mean loss is already inside it, so dividing again makes both N times too small.",
        WHERE_NAIVE, naive_divides_by_batch),
    Misconception(
        "conv_backward", "out_grad_dilated_by_stride", "out_grad is dilated with s zeros instead of s - 1",
        "To undo a stride s, out_grad goes back to where a stride-1 convolution has its outputs: every s-th row "
        "and column, that is s - 1 zeros between neighbouring entries (dilation s - 1). With s zeros each "
        "gradient lands one row and column further out per step, and the input gradient sends it to the wrong "
        "pixels.",
        WHERE_BACKWARD, out_grad_dilated_by_stride),
    Misconception(
        "conv_backward", "stride_without_dilation", "the stride is not undone: out_grad is not dilated",
        "With stride s > 1 the output is a stride-1 output sampled every s pixels, so its gradient must first be "
        "dilated by s - 1 (and cropped) to where the stride-1 outputs are. Your backward pass uses out_grad "
        "as if the stride were 1: the input gradient comes out too small, its values in the wrong places.",
        WHERE_BACKWARD, stride_without_dilation),
    Misconception(
        "conv_naive_backward", "naive_assigns_instead_of_adding", "da is assigned (=) instead of accumulated (+=)",
        "Your loops write each window's contribution into da_pad with =, so where windows overlap (and for every "
        "output channel but the last) the earlier contributions are overwritten. An input pixel takes part in "
        "several outputs, and its gradient is the sum of what each of them sends back: use +=.",
        WHERE_NAIVE, naive_assigns_instead_of_adding),
    Misconception(
        "conv_naive_backward", "naive_crop_with_negative_slice", "the padding is cropped with p:-p",
        "Your da is cut out of da_pad with p:-p. That is right for p > 0, but for p = 0 it is the slice 0:0, "
        "which is empty: da then has no rows and no columns. Crop with p:h_pad - p (and p:w_pad - p).",
        WHERE_NAIVE, naive_crop_with_negative_slice),
    Misconception(
        "conv_im2col_forward", "im2col_ignores_dilation", "the window view ignores the dilation",
        "In the window view, one step of the kernel index i must move d input rows (a dilated kernel's taps "
        "are d pixels apart), so the strides are (sn, sh*s, sw*s, sh*d, sw*d, sc). Yours step one row per tap "
        "(sh, sw): with dilation d > 1 each window reads a compact K x K patch instead of the spread-out taps.",
        WHERE_IM2COL, im2col_ignores_dilation),
    Misconception(
        "conv_im2col_forward", "im2col_kernel_rows_in_wrong_order",
        "the kernel matrix's rows are in another order than the windows'",
        "A window row is flattened in the order (i, j, c) of the view (KH, KW, C_in); your kernel matrix is "
        "flattened in another order (channels first), so each window value is multiplied by the weight of another "
        "tap or channel. With one input channel the orders coincide; with several they do not. Reshape the "
        "(KH, KW, C_in, C_out) kernel to (KH*KW*C_in, C_out) as it is.",
        WHERE_IM2COL, im2col_kernel_rows_in_wrong_order),
    Misconception(
        "nn_conv", "nn_conv_valid_padding", "nn.Conv pads by 0 instead of kernel_size // 2",
        "Your layer uses no padding (VALID), so its output shrinks by kernel_size - 1. nn.Conv uses 'same' "
        "padding kernel_size // 2, which keeps the size at stride 1 for an odd kernel.",
        WHERE_NN, nn_conv_valid_padding),
    Misconception(
        "nn_conv", "nn_conv_layout_by_reshape", "NCHW is turned into NHWC with a reshape",
        "A reshape keeps the elements in memory order, so reshaping (N, C, H, W) to (N, H, W, C) does not move "
        "the channels last: it cuts the rows of the image into pieces and calls them channels. Converting layouts "
        "needs a permutation of the axes (nchw_to_nhwc, a transpose); with one channel the two agree, which is why "
        "such a bug can hide.",
        WHERE_NN, nn_conv_layout_by_reshape),
]


# Inputs on which these mistakes show, for `course check` (probes.py): asymmetric random kernels,
# a batch of 2, padding, stride 2 (square and non-square kernels) and dilation 2.
def _probes() -> list[Probe]:
    r = np.random.default_rng(404)
    probes = []
    for n, h, w, c_in, c_out, kh, kw, s, p, d in [(2, 7, 6, 2, 2, 3, 3, 2, 1, 1), (2, 6, 7, 2, 3, 3, 2, 2, 1, 1),
                                                  (2, 8, 8, 2, 2, 3, 3, 1, 1, 2)]:
        x, k = r.standard_normal((n, h, w, c_in)), r.standard_normal((kh, kw, c_in, c_out))
        out = torch_conv_nhwc(x, k, s, p, d)
        attrs = {"stride": s, "padding": p, "dilation": d}
        g = r.standard_normal(out.shape)
        probes.append(Probe("conv_backward", gradient_call("Conv", attrs, [x, k], g), 1e-8, 1e-8))
        probes.append(Probe("conv_im2col_forward", forward_call("Conv", {**attrs, "dilation": 2}, x, k), 1e-8, 1e-8))
    for n, c_in, h, w, c_out, k, s in [(2, 2, 5, 6, 3, 3, 1), (2, 1, 7, 6, 2, 3, 1)]:
        a_pad, kernel = r.standard_normal((n, c_in, h, w)), r.standard_normal((c_out, c_in, k, k))
        dz = r.standard_normal((n, c_out, h - k + 1, w - k + 1))
        probes.append(Probe("conv_naive_backward", function_call("course_lib.naive:conv2d_backward", dz, a_pad, kernel,
                                                        padding=0, stride=s, dilation=1), 1e-8, 1e-8))
    for c_in, c_out, k, s, n, h, w in [(3, 4, 3, 1, 2, 7, 9), (2, 3, 3, 2, 1, 6, 5)]:
        args = (c_in, c_out, k, s, r.standard_normal((k, k, c_in, c_out)), r.standard_normal(c_out),
                r.standard_normal((n, c_in, h, w)), None)
        probes.append(Probe("nn_conv", request_call("nn_conv", *args), 1e-8, 1e-8))
    return probes


# The other tasks whose code a task's probes run (probes.py): the backward pass and the layer
# convolve with the student's Conv.compute.
NEEDS = {"conv_backward": ("conv_im2col_forward",), "nn_conv": ("conv_im2col_forward",)}

PROBES = _probes()
