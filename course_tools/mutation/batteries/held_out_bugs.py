"""Realistic wrong backward passes kept apart from the planted bugs of the hidden suite
(autograder/06_gradient_checking/planted_bugs.py): the equivalence battery runs a mutant of
planted_bug_checks against these too, so that an entry is not judged on the bugs the suite (and
the student) already saw. Interfaces as there:

    CONV[name](dz, a_pad, w, padding, stride) -> (da, dw, db)   NCHW, da of the unpadded input
    POOL[name](dout, x, k, s) -> dx                              max pooling, NHWC, no padding

Each is one mistake a student makes; the comment says which problem reveals it.
"""
from __future__ import annotations

import numpy as np


def _conv(dz, a_pad, w, padding, stride, bug=None):
    n, c_in, hp, wp = a_pad.shape
    c_out, _, kh, kw = w.shape
    p, s = padding, stride
    h_out, w_out = (hp - kh) // s + 1, (wp - kw) // s + 1
    if dz.shape != (n, c_out, h_out, w_out):
        raise ValueError(f"dz has shape {dz.shape}, expected {(n, c_out, h_out, w_out)}")
    da_pad = np.zeros(a_pad.shape)
    dw = np.zeros(w.shape)
    images = 1 if bug == "da of the first image only" else n
    channels = c_in if bug == "output channels looped over C_in" else c_out
    for i in range(n):
        for q in range(channels):
            for r in range(h_out):
                for t in range(w_out):
                    window = (slice(None), slice(r * s, r * s + kh), slice(t * s, t * s + kw))
                    g = dz[i, q % c_out, r, t]
                    dw[q % c_out] += g * a_pad[i][window]
                    if i < images:
                        da_pad[i][window] += g * w[q % c_out]
    if bug == "da of the first image only":
        da_pad[1:] = da_pad[:1]
    db = dz.sum(axis=(0, 2, 3))
    if bug == "a tiny weight decay":  # nonzero gradient for a zero upstream gradient
        dw = dw + 1e-12 * w
    if bug == "crop sized from the windows":  # ignores the rows and columns no window reads
        used_h, used_w = (h_out - 1) * s + kh, (w_out - 1) * s + kw
        da = da_pad[:, :, p:used_h - p if used_h - p > p else used_h, p:used_w - p if used_w - p > p else used_w]
    else:
        da = da_pad[:, :, p:hp - p, p:wp - p]
    return da, dw, db


def _pool(dout, x, k, s, bug=None):
    n, h, w, c = x.shape
    h_out, w_out = (h - k) // s + 1, (w - k) // s + 1
    if dout.shape != (n, h_out, w_out, c):
        raise ValueError(f"dout has shape {dout.shape}, expected {(n, h_out, w_out, c)}")
    dx = np.zeros(x.shape)
    for i in range(h_out):
        for j in range(w_out):
            top = h - k if bug == "last windows aligned to the edge" and i == h_out - 1 else i * s
            left = w - k if bug == "last windows aligned to the edge" and j == w_out - 1 else j * s
            for b in range(n):
                for ch in range(c):
                    source = 0 if bug == "the first channel's maximum" else ch
                    window = x[b, top:top + k, left:left + k, source]
                    r, t = np.unravel_index(np.argmax(window), window.shape)
                    dx[b, top + r, left + t, ch] += dout[b, i, j, ch]
    if bug == "only the first image":
        dx[1:] = 0.0
    if bug == "a tiny floor":
        dx = dx + 1e-12
    return dx


def _named(fn, bugs):
    return {bug: (lambda *args, _bug=bug: fn(*args, bug=_bug)) for bug in bugs}


CONV = {"correct loops": lambda *args: _conv(*args),
        **_named(_conv, ["output channels looped over C_in",      # C_in != C_out
                         "da of the first image only",            # batch > 1
                         "a tiny weight decay",                    # dz = 0 must give exactly 0
                         "crop sized from the windows"])}          # rows and columns no window reads
POOL = {"correct loops": lambda *args: _pool(*args),
        **_named(_pool, ["only the first image",                  # batch > 1
                         "the first channel's maximum",           # several channels
                         "last windows aligned to the edge",      # rows and columns no window reads
                         "a tiny floor"])}                         # not caught by any tolerance: accepted
