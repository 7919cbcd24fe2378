# Generated from course_lib/naive_pooling.py for the release of 01_forward_ops by `python -m course_tools.build` - do not edit.
"""Naive loop versions of pooling, NHWC, one window at a time: the reference that assignment 05's
visible checks compare with, and the stand-ins those checks lend (``course_lib.checks.lent``).

They are slow on purpose: every index is visible. They give the rules that 05's sections 3 to 6
ask the student to work out, so the notebook imports them instead of showing them.

    x, a:    (N, H, W, C)                the input
    columns: (N, H_out, W_out, k*k, C)   one row of k*k values per window, row-major (t = u*k + v)
    g:       (N, H_out, W_out, C)        the upstream gradient
"""
from __future__ import annotations

import numpy as np

from . import nd
from .ops.pooling import _pool_geometry


def loop_maxpool(x, k, s=None, p=0):
    """Max pooling of NHWC x, one window at a time (padding with -inf)."""
    s = k if s is None else s
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)), constant_values=-np.inf)
    h_out, w_out = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.empty((n, h_out, w_out, c), dtype=x.dtype)
    for i in range(h_out):
        for j in range(w_out):
            out[:, i, j, :] = xp[:, i * s:i * s + k, j * s:j * s + k, :].max(axis=(1, 2))
    return out


def loop_first_max_mask(x, k, s=None, p=0):
    """1.0 at the FIRST maximum of every window (np.argmax of a 2-D window scans it row-major),
    0.0 elsewhere: (N, H, W, C) -> (N, H_out, W_out, k*k, C)."""
    s = k if s is None else s
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)), constant_values=-np.inf)
    h_out, w_out = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    mask = np.zeros((n, h_out, w_out, k * k, c), dtype=x.dtype)
    for b in range(n):
        for ch in range(c):
            for i in range(h_out):
                for j in range(w_out):
                    window = xp[b, i * s:i * s + k, j * s:j * s + k, ch]
                    mask[b, i, j, np.argmax(window), ch] = 1.0
    return mask


def loop_col2im(columns, in_shape, k, s=None, p=0):
    """Add each window's k*k values back onto the input positions it covers (+=: windows overlap),
    then drop the padding: (N, H_out, W_out, k*k, C) -> in_shape (N, H, W, C)."""
    s = k if s is None else s
    n, h, w, c = in_shape
    _, h_out, w_out, _, _ = columns.shape
    out = np.zeros((n, h + 2 * p, w + 2 * p, c), dtype=columns.dtype)
    for i in range(h_out):
        for j in range(w_out):
            out[:, i * s:i * s + k, j * s:j * s + k, :] += columns[:, i, j].reshape(n, k, k, c)
    return out[:, p:p + h, p:p + w, :]


def loop_maxpool_backward(g, x, k, s=None, p=0):
    """Visit every window, find its FIRST maximum (np.argmax, row-major), add g there."""
    s = k if s is None else s
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)), constant_values=-np.inf)
    dxp = np.zeros_like(xp)
    for b in range(n):
        for ch in range(c):
            for i in range(g.shape[1]):
                for j in range(g.shape[2]):
                    window = xp[b, i * s:i * s + k, j * s:j * s + k, ch]
                    u, v = np.unravel_index(np.argmax(window), window.shape)
                    dxp[b, i * s + u, j * s + v, ch] += g[b, i, j, ch]   # += : windows may overlap
    return dxp[:, p:p + h, p:p + w, :]


def loop_avgpool(x, k, s=None, p=0):
    """Zero padding, and the divisor is always k*k."""
    s = k if s is None else s
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    h_out, w_out = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.empty((n, h_out, w_out, c), dtype=x.dtype)
    for i in range(h_out):
        for j in range(w_out):
            out[:, i, j, :] = xp[:, i * s:i * s + k, j * s:j * s + k, :].sum(axis=(1, 2)) / (k * k)
    return out


def loop_avgpool_backward(g, in_shape, k, s=None, p=0):
    """Every window adds g / k**2 to each position it covers; padding is cropped away."""
    s = k if s is None else s
    n, h, w, c = in_shape
    dxp = np.zeros((n, h + 2 * p, w + 2 * p, c))
    for i in range(g.shape[1]):
        for j in range(g.shape[2]):
            dxp[:, i * s:i * s + k, j * s:j * s + k, :] += g[:, i:i + 1, j:j + 1, :] / (k * k)
    return dxp[:, p:p + h, p:p + w, :]


# Stand-ins: the loops as `compute` methods, lent to the checks of other tasks.
def lent_mask_compute(self, a):
    k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
    return nd.array(loop_first_max_mask(a.numpy(), k, s, p), dtype=a.dtype)


def lent_col2im_compute(self, columns):
    k, s, p, _, _ = _pool_geometry(self.in_shape, self.kernel_size, self.stride, self.padding)
    return nd.array(loop_col2im(columns.numpy(), self.in_shape, k, s, p), dtype=columns.dtype)


def lent_maxpool_compute(self, a):
    k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
    return nd.array(loop_maxpool(a.numpy(), k, s, p), dtype=a.dtype)


def lent_avgpool_compute(self, a):
    k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
    return nd.array(loop_avgpool(a.numpy(), k, s, p), dtype=a.dtype)
