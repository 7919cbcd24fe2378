# Generated from course_lib/naive.py for the release of 07_experiments by `python -m course_tools.build` - do not edit.
"""Naive loop versions of convolution, NCHW, as in the seeds' reference answer (assignment 04).

They are slow on purpose: one loop per output element, so every index is visible. The fast,
vectorised versions (course_lib.ops.conv) are checked against them, and experiment 07
trains with both.

    a_pad: (N, C_in, H + 2p, W + 2p)   the zero-padded input
    w:     (C_out, C_in, KH, KW)
    b:     (C_out,)
    z:     (N, C_out, H_out, W_out)
"""
from __future__ import annotations

import numpy as np


def conv2d_forward(a_pad: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int = 1,
                   dilation: int = 1) -> np.ndarray:
    """z[i, q, r, s] = b[q] + sum over (c, u, v) of w[q, c, u, v] * a_pad[i, c, r*stride + u*dilation, s*stride + v*dilation]."""
    n, c_in, h, w_in = a_pad.shape
    c_out, c_w, kh, kw = w.shape
    if c_w != c_in:
        raise ValueError(f"conv2d_forward: input has {c_in} channels, kernel {w.shape} expects {c_w}")
    h_out = (h - dilation * (kh - 1) - 1) // stride + 1
    w_out = (w_in - dilation * (kw - 1) - 1) // stride + 1
    z = np.zeros((n, c_out, h_out, w_out), dtype=np.result_type(a_pad, w))
    for i in range(n):
        for q in range(c_out):
            for r in range(h_out):
                for s in range(w_out):
                    rows = slice(r * stride, r * stride + dilation * (kh - 1) + 1, dilation)
                    cols = slice(s * stride, s * stride + dilation * (kw - 1) + 1, dilation)
                    z[i, q, r, s] = np.sum(a_pad[i, :, rows, cols] * w[q]) + b[q]
    return z


def conv2d_backward(dz: np.ndarray, a_pad: np.ndarray, w: np.ndarray, padding: int = 0,
                    stride: int = 1, dilation: int = 1):
    """Gradients of the loss with respect to the unpadded input, the kernel and the bias.

    dz: (N, C_out, H_out, W_out), the loss's gradient w.r.t. z (any 1/batch factor is already
    inside it: do not divide again). Returns (da, dw, db) with da of the *unpadded* input's
    shape, dw of w's shape and db = dz.sum((0, 2, 3)).
    """
    h_out = (a_pad.shape[2] - dilation * (w.shape[2] - 1) - 1) // stride + 1
    w_out = (a_pad.shape[3] - dilation * (w.shape[3] - 1) - 1) // stride + 1
    expected = (a_pad.shape[0], w.shape[0], h_out, w_out)
    if dz.shape != expected or a_pad.shape[1] != w.shape[1]:
        raise ValueError(f"conv2d_backward: dz {dz.shape} does not match input {a_pad.shape} "
                         f"and kernel {w.shape} (expected dz of shape {expected})")
    da_pad = np.zeros_like(a_pad, dtype=np.result_type(dz, w))
    dw = np.zeros_like(w, dtype=np.result_type(dz, a_pad))
    db = dz.sum(axis=(0, 2, 3))
    n, c_out, h_out, w_out = dz.shape
    kh, kw = w.shape[2:]
    for i in range(n):
        for q in range(c_out):
            for r in range(h_out):
                for s in range(w_out):
                    rows = slice(r * stride, r * stride + dilation * (kh - 1) + 1, dilation)
                    cols = slice(s * stride, s * stride + dilation * (kw - 1) + 1, dilation)
                    g = dz[i, q, r, s]
                    # each output used this window once: its gradient flows back to all of it
                    dw[q] += g * a_pad[i, :, rows, cols]
                    da_pad[i, :, rows, cols] += g * w[q]
    h_pad, w_pad = a_pad.shape[2:]
    da = da_pad[:, :, padding:h_pad - padding, padding:w_pad - padding]
    return da, dw, db
