"""PyTorch as the reference for convolution, and the layout conversions it needs: one copy for
the hidden suites (autograder/04, 05) and the misconceptions (autograder/04 and 07's
misconceptions.py), so that every check of a conv compares with the same oracle.

Layouts: course_lib is NHWC with a (KH, KW, C_in, C_out) kernel (HWIO); PyTorch and the naive
loops are NCHW with a (C_out, C_in, KH, KW) kernel (OIHW). Each conversion returns a compact
copy, so a student's code never receives a strided view of the grader's array.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def nchw(x):
    """(N, H, W, C) -> (N, C, H, W)."""
    return np.ascontiguousarray(np.transpose(x, (0, 3, 1, 2)))


def nhwc(x):
    """(N, C, H, W) -> (N, H, W, C)."""
    return np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))


def oihw(w):
    """(KH, KW, C_in, C_out) -> (C_out, C_in, KH, KW)."""
    return np.ascontiguousarray(np.transpose(w, (3, 2, 0, 1)))


def hwio(w):
    """(C_out, C_in, KH, KW) -> (KH, KW, C_in, C_out)."""
    return np.ascontiguousarray(np.transpose(w, (2, 3, 1, 0)))


def torch_conv_nchw(x, w, stride=1, padding=0, dilation=1, g=None, bias=None):
    """PyTorch's conv2d (cross-correlation) in float64 of x: (N, C_in, H, W) with w: (C_out, C_in,
    KH, KW): the output; with g (the output's shape), (out, dx, dw, db) by autograd (db None
    without a bias)."""
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(np.ascontiguousarray(w), dtype=torch.float64, requires_grad=True)
    bt = None if bias is None else torch.tensor(bias, dtype=torch.float64, requires_grad=True)
    out = F.conv2d(xt, wt, bt, stride=stride, padding=padding, dilation=dilation)
    if g is None:
        return out.detach().numpy()
    out.backward(torch.tensor(g, dtype=torch.float64))
    return (out.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(),
            None if bt is None else bt.grad.numpy())


def torch_conv_nhwc(x, w, stride=1, padding=0, dilation=1, g=None):
    """The same in course_lib's layout, x: (N, H, W, C_in), w: (KH, KW, C_in, C_out): the NHWC
    output, or with g (NHWC) (out, dx, dw) in NHWC / NHWC / HWIO."""
    if g is None:
        return nhwc(torch_conv_nchw(nchw(x), oihw(w), stride, padding, dilation))
    out, dx, dw, _ = torch_conv_nchw(nchw(x), oihw(w), stride, padding, dilation, nchw(g))
    return nhwc(out), nhwc(dx), hwio(dw)
