"""Buggy backward passes for assignment 06's planted_bug_checks, in the notebook's interfaces:

  conv_<bug>(dz, a_pad, w, padding, stride) -> (da, dw, db)   NCHW, w (C_out, C_in, KH, KW),
      da of the *unpadded* input's shape (check_conv_backward's interface);
  pool_<bug>(dout, x, k, s) -> dx                              max pooling, NHWC, no padding
      (check_pool_backward's interface).

The first five conv bugs and the first pool bug are the notebook's own PLANTED_CONV_BUGS /
PLANTED_POOL_BUGS (the student saw them); the others are unseen. ``conv_correct`` and
``pool_correct`` are right (a check must pass them). Every bug is visible to the checks the
notebook asks for (asymmetric kernel, padding > 0, stride > 1, batch > 1, C_in != C_out,
rows and columns that no window reads, overlapping windows, distinct values, zero upstream
gradient, wrong dz shapes, finiteness, and the comparison's tolerance: dw / n is off by a factor
2 at batch 2, and zero where dz is zero). The equivalence battery of course mutants keeps a
second set apart from these (course_tools/mutation/batteries/held_out_bugs.py).
"""
from __future__ import annotations

import functools

import numpy as np


def _conv_backward(dz, a_pad, w, padding=0, stride=1, bug=None):
    n, c_in, hp, wp = a_pad.shape
    c_out, c_w, kh, kw = w.shape
    p, s = padding, stride
    h_out, w_out = (hp - kh) // s + 1, (wp - kw) // s + 1
    if bug == "checks channels only":
        if dz.ndim != 4 or dz.shape[1] != c_out:
            raise ValueError(f"conv backward: dz has {dz.shape[1]} channels, the kernel {w.shape} has {c_out}")
    elif bug == "checks batch and channels only":
        if dz.ndim != 4 or dz.shape[:2] != (n, c_out):
            raise ValueError(f"conv backward: dz {dz.shape} does not match batch {n} and channels {c_out}")
    elif dz.shape != (n, c_out, h_out, w_out) or c_w != c_in:
        raise ValueError(f"conv backward: dz has shape {dz.shape}, but input {a_pad.shape} and kernel "
                         f"{w.shape} (stride {s}) give outputs of shape {(n, c_out, h_out, w_out)}")
    if bug == "loops output channels over C_in":  # range(w.shape[1]) for the output channels:
        dz = dz.copy()                           # those past C_in get no gradient (C_in < C_out)
        dz[:, c_in:] = 0.0
    scale = 1.0
    if bug == "rescales by max |dz|":
        scale = np.abs(dz).max()
        with np.errstate(invalid="ignore", divide="ignore"):
            dz = dz / scale
    nz, _, hz, wz = dz.shape
    db = dz.mean(axis=(0, 2, 3)) if bug == "averages db" else dz.sum(axis=(0, 2, 3))
    dw = np.zeros(w.shape, dtype=np.result_type(dz, a_pad))
    for u in range(kh):
        for v in range(kw):
            patch = a_pad[:, :, u:u + s * (hz - 1) + 1:s, v:v + s * (wz - 1) + 1:s]
            if bug == "dw from the first image only":
                dw[:, :, u, v] = np.einsum("qrs,crs->qc", dz[0], patch[0])
            else:
                dw[:, :, u, v] = np.einsum("iqrs,icrs->qc", dz, patch)
    if bug == "ignores the stride in da":
        dz_dil = dz
    else:
        dz_dil = np.zeros((nz, c_out, s * (hz - 1) + 1, s * (wz - 1) + 1), dtype=dz.dtype)
        dz_dil[:, :, ::s, ::s] = dz
    full = np.pad(dz_dil, ((0, 0), (0, 0), (kh - 1, hp - dz_dil.shape[2]), (kw - 1, wp - dz_dil.shape[3])))
    w_rot = w if bug == "kernel not flipped" else w[:, :, ::-1, ::-1]
    da_pad = np.zeros(a_pad.shape, dtype=np.result_type(dz, w))
    for u in range(kh):
        for v in range(kw):
            da_pad += np.einsum("iqrs,qc->icrs", full[:, :, u:u + hp, v:v + wp], w_rot[:, :, u, v])
    unread_h, unread_w = (hp - kh) % s, (wp - kw) % s  # rows and columns at the bottom/right no window reads
    if bug == "unread rows at the top" and (unread_h or unread_w):
        # the gradient of the rows the windows read, placed after the unread ones instead of before them
        da_pad = np.roll(da_pad, (unread_h, unread_w), axis=(2, 3))
    if bug == "crops the padding from one side":
        da = da_pad[:, :, :hp - 2 * p, :wp - 2 * p]
    elif bug == "returns the padded da":
        da = da_pad
    else:
        da = da_pad[:, :, p:hp - p, p:wp - p]
    if bug == "adds weight decay":
        dw = dw + 1e-3 * w
    if bug == "adds an epsilon to da":  # "for stability": invisible to every tolerance, not to dz = 0
        da = da + 1e-12
    if bug == "divides dw by the batch size":
        dw = dw / nz  # the 1/m of a mean loss is already inside dz: a second division is off by n
    if bug == "transposes dw spatially":
        dw = dw.swapaxes(2, 3).copy() if kh == kw else dw
    with np.errstate(invalid="ignore"):
        return da * scale, dw * scale, db * scale


def _maxpool_backward(dout, x, k, s, bug=None):
    n, h, w, c = x.shape
    h_out, w_out = (h - k) // s + 1, (w - k) // s + 1
    if dout.shape != (n, h_out, w_out, c):
        raise ValueError(f"max pool backward: dout has shape {dout.shape}, expected {(n, h_out, w_out, c)}")
    step = k if bug == "ignores the stride" else s
    # windows laid from the bottom-right corner: the same when no row or column is left unread
    shift_h, shift_w = ((h - k) % s, (w - k) % s) if bug == "windows from the bottom right" else (0, 0)
    fill = np.nan if bug == "NaN where the gradient is zero" else 0.0
    dx = np.zeros(x.shape, dtype=np.result_type(x, dout))
    touched = np.zeros(x.shape, dtype=bool)
    for i in range(h_out):
        for j in range(w_out):
            if step * i + k > h or step * j + k > w:
                continue
            rows = slice(shift_h + i * step, shift_h + i * step + k)
            cols = slice(shift_w + j * step, shift_w + j * step + k)
            window = x[:, rows, cols, :].reshape(n, k * k, c)
            if bug == "every image routed like the first":
                window = np.broadcast_to(window[:1], window.shape)
            pick = window.argmin(axis=1) if bug == "routes to the minimum" else window.argmax(axis=1)
            mask = np.arange(k * k)[None, :, None] == pick[:, None, :]
            if bug == "spreads over the window":
                mask = np.ones_like(mask)
            g = dout[:, i, j, :][:, None, :] / (k * k if bug == "divides by the window size" else 1)
            share = (mask * g).reshape(n, k, k, c)
            if bug == "overwrites overlapping windows":
                dx[:, rows, cols, :] = share
            else:
                dx[:, rows, cols, :] += share
            touched[:, rows, cols, :] |= mask.reshape(n, k, k, c)
    if bug == "NaN where the gradient is zero":
        dx = np.where(touched, dx, fill)
    return dx


conv_correct = functools.partial(_conv_backward, bug=None)
pool_correct = functools.partial(_maxpool_backward, bug=None)

CONV_BUGS = {
    # the notebook's PLANTED_CONV_BUGS
    "conv_kernel_not_flipped": "kernel not flipped",
    "conv_crops_padding_one_side": "crops the padding from one side",
    "conv_adds_weight_decay": "adds weight decay",
    "conv_rescales_by_max_dz": "rescales by max |dz|",
    "conv_checks_channels_only": "checks channels only",
    # unseen
    "conv_ignores_stride_in_da": "ignores the stride in da",
    "conv_dw_first_image_only": "dw from the first image only",
    "conv_averages_db": "averages db",
    "conv_returns_padded_da": "returns the padded da",
    "conv_transposes_dw_spatially": "transposes dw spatially",
    "conv_checks_batch_and_channels_only": "checks batch and channels only",
    "conv_divides_dw_by_batch": "divides dw by the batch size",
    # issue 37's classes: C_in != C_out, rows and columns no window reads
    "conv_loops_output_channels_over_c_in": "loops output channels over C_in",
    "conv_unread_rows_at_the_top": "unread rows at the top",
    "conv_adds_epsilon_to_da": "adds an epsilon to da",  # exactly zero for dz = 0, not close to zero
}
POOL_BUGS = {
    # the notebook's PLANTED_POOL_BUGS
    "pool_overwrites_overlapping_windows": "overwrites overlapping windows",
    # unseen
    "pool_ignores_stride": "ignores the stride",
    "pool_divides_by_window_size": "divides by the window size",
    "pool_spreads_over_window": "spreads over the window",
    "pool_routes_to_minimum": "routes to the minimum",
    "pool_nan_where_gradient_is_zero": "NaN where the gradient is zero",
    # issue 37's classes: batch > 1, rows and columns no window reads
    "pool_every_image_routed_like_the_first": "every image routed like the first",
    "pool_windows_from_the_bottom_right": "windows from the bottom right",
}
for _name, _bug in CONV_BUGS.items():
    globals()[_name] = functools.partial(_conv_backward, bug=_bug)
for _name, _bug in POOL_BUGS.items():
    globals()[_name] = functools.partial(_maxpool_backward, bug=_bug)
