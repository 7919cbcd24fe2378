"""Misconceptions of 04_conv_backward, each a wrong implementation written here from its idea.

Layouts as in the hidden suite: course_lib's Conv is NHWC with a (KH, KW, C_in, C_out) kernel;
the naive loops are NCHW with a (C_out, C_in, KH, KW) kernel. PyTorch (float64) computes the
right parts of each wrong answer.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..diagnosis import Call, Misconception

WHERE_BACKWARD = "section 6 of 04_conv_backward, \"The backward pass, as convolutions\""
WHERE_NAIVE = "section 4 of 04_conv_backward, \"The naive loops\""


def _nchw(x):
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


def _nhwc(x):
    return np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))


def _oihw(w):
    return np.ascontiguousarray(np.transpose(w, (3, 2, 0, 1)))


def _hwio(w):
    return np.ascontiguousarray(np.transpose(w, (2, 3, 1, 0)))


def torch_grads_nchw(x, w, g, stride, padding, dilation):
    """(dx, dw) of PyTorch's conv2d, NCHW / OIHW, float64."""
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(w, dtype=torch.float64, requires_grad=True)
    F.conv2d(xt, wt, stride=stride, padding=padding, dilation=dilation).backward(torch.tensor(g, dtype=torch.float64))
    return xt.grad.numpy(), wt.grad.numpy()


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


def kernel_not_flipped(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    # Correlating with k itself is the right formula applied to the kernel rotated by 180 degrees.
    dx, _ = torch_grads_nchw(_nchw(x), _oihw(k[::-1, ::-1].copy()), _nchw(g), s, p, d)
    _, dw = torch_grads_nchw(_nchw(x), _oihw(k), _nchw(g), s, p, d)
    return _as_result(call, _nhwc(dx), _hwio(dw))


def padding_ignores_forward_padding(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    if p == 0:
        return None  # the same as the right answer
    # Full padding d(K-1) without taking p off: the gradient of the *padded* input, uncropped.
    x_pad = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    dx, _ = torch_grads_nchw(_nchw(x_pad), _oihw(k), _nchw(g), s, 0, d)
    _, dw = torch_grads_nchw(_nchw(x), _oihw(k), _nchw(g), s, p, d)
    return _as_result(call, _nhwc(dx), _hwio(dw))


def kernel_gradient_divided_by_batch(call: Call):
    found = _conv_gradient_call(call)
    if found is None:
        return None
    x, k, g, s, p, d = found
    dx, dw = torch_grads_nchw(_nchw(x), _oihw(k), _nchw(g), s, p, d)
    return _as_result(call, _nhwc(dx), _hwio(dw) / x.shape[0])


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
]
