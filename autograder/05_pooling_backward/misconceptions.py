"""Misconceptions of 05_pooling_backward, each a wrong pooling written here in NumPy from its idea.

Layout as in course_lib: NHWC, square windows of size k, stride s (None: k), padding p.
"""
from __future__ import annotations

import numpy as np

from course_tools.grading.api import (Call, Misconception, Probe, call_of, forward_call, forward_of,
                                      gradient_call, gradient_of, in_dtype, notebook_place)

NOTEBOOK = "05_pooling_backward"


def _geometry(attrs) -> tuple[int, int, int]:
    k = int(attrs["kernel_size"])
    return k, k if attrs.get("stride") is None else int(attrs["stride"]), int(attrs.get("padding", 0))


def windows(x: np.ndarray, k: int, s: int, p: int, fill: float) -> np.ndarray:
    """Every window of x (N, H, W, C) padded with ``fill``: (N, H_out, W_out, k*k, C), taps row-major."""
    x = np.pad(x.astype(np.float64), ((0, 0), (p, p), (p, p), (0, 0)), constant_values=fill)
    n, h, w, c = x.shape
    h_out, w_out = (h - k) // s + 1, (w - k) // s + 1
    taps = [x[:, u:u + s * (h_out - 1) + 1:s, v:v + s * (w_out - 1) + 1:s, :] for u in range(k) for v in range(k)]
    return np.stack(taps, axis=3)


def scatter(shares: np.ndarray, in_shape, k: int, s: int, p: int) -> np.ndarray:
    """Add every window's shares (N, H_out, W_out, k*k, C) back onto the input positions they came
    from, and drop what lands on the padding: (N, H, W, C)."""
    n, h, w, c = in_shape
    _, h_out, w_out, _, _ = shares.shape
    out = np.zeros((n, h + 2 * p, w + 2 * p, c))
    for u in range(k):
        for v in range(k):
            out[:, u:u + s * (h_out - 1) + 1:s, v:v + s * (w_out - 1) + 1:s, :] += shares[:, :, :, u * k + v, :]
    return out[:, p:p + h, p:p + w, :]


def _every_maximum(x, k, s, p):
    w = windows(x, k, s, p, -np.inf)
    return (w == w.max(axis=3, keepdims=True)).astype(np.float64)


def _first_maximum_of_zero_padded(x, k, s, p):
    w = windows(x, k, s, p, 0.0)  # zero padding can be the maximum of a window of negative values
    first = w.argmax(axis=3)
    return (np.arange(k * k)[None, None, None, :, None] == first[:, :, :, None, :]).astype(np.float64)


def _mask(call: Call, mask_of):
    """FirstMaxMask.compute (the task maxpool_mask) made by ``mask_of(x, k, s, p)``."""
    found = forward_of(call, "FirstMaxMask")
    if found is None:
        return None
    attrs, (x,) = found
    k, s, p = _geometry(attrs)
    return in_dtype(mask_of(x, k, s, p), x)


def _last_maximum(x, k, s, p):
    w = windows(x, k, s, p, -np.inf)
    last = k * k - 1 - w[:, :, :, ::-1, :].argmax(axis=3)  # argmax of the reversed window
    return (np.arange(k * k)[None, None, None, :, None] == last[:, :, :, None, :]).astype(np.float64)


def mask_marks_the_last_maximum(call: Call):
    return _mask(call, _last_maximum)


def _col2im(call: Call, adds: bool = True, crop_minus_p: bool = False):
    """Col2Im.compute (the task pool_col2im) with a wrong step: slabs assigned (the last window
    written wins) instead of added, or the padding cropped with [p:-p]."""
    found = forward_of(call, "Col2Im")
    if found is None:
        return None
    attrs, (columns,) = found
    k, s, p = _geometry(attrs)
    n, h, w, c = attrs["in_shape"]
    _, h_out, w_out, _, _ = columns.shape
    out = np.zeros((n, h + 2 * p, w + 2 * p, c))
    for u in range(k):
        for v in range(k):
            at = (slice(None), slice(u, u + s * (h_out - 1) + 1, s), slice(v, v + s * (w_out - 1) + 1, s), slice(None))
            out[at] = out[at] + columns[:, :, :, u * k + v, :] if adds else columns[:, :, :, u * k + v, :]
    out = out[:, p:-p, p:-p, :] if crop_minus_p else out[:, p:p + h, p:p + w, :]
    return in_dtype(out, columns)


def col2im_assigns_instead_of_adding(call: Call):
    return _col2im(call, adds=False)


def col2im_crops_minus_p(call: Call):
    found = forward_of(call, "Col2Im")
    if found is None or _geometry(found[0])[2] > 0:
        return None  # [p:-p] is right for p > 0
    return _col2im(call, crop_minus_p=True)


def ties_to_every_maximum(call: Call):
    return _mask(call, _every_maximum)


def backward_ties_to_every_maximum(call: Call):
    """MaxPool2dBackward.compute (the task maxpool_backward) written with its own window == max mask:
    the same idea as ties_to_every_maximum, made in the backward pass instead of the mask."""
    found = gradient_of(call, "MaxPool2d")
    if found is not None:
        attrs, (x,), g = found
    else:
        found = call_of(call, "course_lib.ops:max_pool2d")
        if found is None or found[2] is None:
            return None
        (x,), attrs, g = found
    k, s, p = _geometry(attrs)
    shares = _every_maximum(x, k, s, p) * g.astype(np.float64)[:, :, :, None, :]
    grad = in_dtype(scatter(shares, x.shape, k, s, p), g)
    return [grad] if call.scenario == "gradient" else {"grads": [grad]}


def backward_mask_pads_with_zeros(call: Call):
    return _mask(call, _first_maximum_of_zero_padded)


def maxpool_pads_with_zeros(call: Call):
    found = forward_of(call, "MaxPool2d")
    if found is None:
        return None
    attrs, (x,) = found
    return in_dtype(windows(x, *_geometry(attrs), 0.0).max(axis=3), x)


def avgpool_without_division(call: Call):
    found = forward_of(call, "AvgPool2d")
    if found is None:
        return None
    attrs, (x,) = found
    return in_dtype(windows(x, *_geometry(attrs), 0.0).sum(axis=3), x)


def _avg_backward(call: Call, divisor_of):
    found = gradient_of(call, "AvgPool2d")
    if found is not None:
        attrs, (x,), g = found
    else:
        found = call_of(call, "course_lib.ops:avg_pool2d")
        if found is None or found[2] is None:
            return None
        (x,), attrs, g = found
    k, s, p = _geometry(attrs)
    shares = np.repeat(g.astype(np.float64)[:, :, :, None, :] / divisor_of(k), k * k, axis=3)
    grad = in_dtype(scatter(shares, x.shape, k, s, p), g)
    return [grad] if call.scenario == "gradient" else {"grads": [grad]}


def avgpool_backward_divides_by_k(call: Call):
    return _avg_backward(call, lambda k: k)


def avgpool_backward_without_division(call: Call):
    return _avg_backward(call, lambda k: 1)


def _where(section: int, title: str, more: str = "") -> str:
    return notebook_place(f"section {section}", NOTEBOOK, title, more)


MISCONCEPTIONS = [
    Misconception(
        "maxpool_forward", "maxpool_pads_with_zeros", "the padding is 0 instead of -inf",
        "Your max pooling pads with zeros. A border window whose real values are all negative then outputs 0, "
        "a value that is not in the input at all. Padding must never win the maximum: pad with -inf.",
        _where(3, "Max pooling, forward"), maxpool_pads_with_zeros),
    Misconception(
        "maxpool_mask", "ties_to_every_maximum", "every tied maximum is marked",
        "Your mask is window == max, so when several elements tie for a window's maximum each of them is marked, "
        "and the backward pass would send the window's whole gradient to every one of them, counting it several "
        "times. The course (like PyTorch) marks the first maximum in row-major window order only: argmax over "
        "the window finds it.",
        _where(4, "Max pooling, backward: routing", ' (4a) and section 7, "Ties"'), ties_to_every_maximum),
    Misconception(
        "maxpool_backward", "ties_to_every_maximum", "every tied maximum gets the window's gradient",
        "Your backward pass routes each window's gradient with window == max, so when several elements tie for a "
        "window's maximum each of them receives the whole gradient, and the window's gradient is counted several "
        "times. The course (like PyTorch) sends it to the first maximum in row-major window order only: the "
        "first-maximum mask of 4a finds it.",
        _where(4, "Max pooling, backward: routing", ' (4c) and section 7, "Ties"'), backward_ties_to_every_maximum),
    Misconception(
        "maxpool_mask", "backward_mask_pads_with_zeros",
        "the mask looks for the maxima in zero-padded windows",
        "Your mask finds each window's maximum in windows padded with 0. For a border window of negative "
        "values the padding wins, so the mark lands on a padded position, which is cropped away: those inputs "
        "would get no gradient. Find the maxima exactly as the forward pass does, with -inf padding.",
        _where(4, "Max pooling, backward: routing", " (4a)"), backward_mask_pads_with_zeros),
    Misconception(
        "maxpool_mask", "mask_marks_the_last_maximum", "the mask marks the last maximum of a tied window",
        "When several elements tie for a window's maximum, your mask marks the last of them. The course, like "
        "PyTorch, marks the first one in row-major window order (top row first, left to right), which is what "
        "argmax over the window returns; without ties the two agree, so only tied windows show it.",
        _where(4, "Max pooling, backward: routing", ' (4a) and section 7, "Ties"'), mask_marks_the_last_maximum),
    Misconception(
        "pool_col2im", "col2im_assigns_instead_of_adding",
        "col2im writes each window's slab with = instead of adding it",
        "Where windows overlap (stride smaller than the kernel), one input position receives values from several "
        "windows, and col2im must add them all up. Writing each slab with = keeps only the last window's value "
        "at such a position; without overlap the two agree.",
        _where(4, "Max pooling, backward: routing", " (4b)"), col2im_assigns_instead_of_adding),
    Misconception(
        "pool_col2im", "col2im_crops_minus_p", "the padding is cropped with [p:-p]",
        "Your col2im crops the padding with [p:-p]. For p > 0 that is right, but for p = 0 it is the slice 0:0, "
        "which is empty: the result then has no rows and no columns. Crop with [p:p + h] (or only when p > 0).",
        _where(4, "Max pooling, backward: routing", " (4b)"), col2im_crops_minus_p),
    Misconception(
        "avgpool_forward", "avgpool_without_division", "the window is summed, not averaged",
        "Your average pooling adds up the k*k values of each window but does not divide by k*k, so every output "
        "is k^2 times too large. The divisor is always k^2, padded zeros included.",
        _where(5, "Average pooling: forward and backward"), avgpool_without_division),
    Misconception(
        "avgpool_backward", "avgpool_backward_divides_by_k", "each element gets g / k instead of g / k^2",
        "Every element of a window enters the mean with weight 1/k^2 (the window has k*k elements), so each one "
        "receives g / k^2 from that window. Dividing by k makes the gradient k times too large.",
        _where(5, "Average pooling: forward and backward"), avgpool_backward_divides_by_k),
    Misconception(
        "avgpool_backward", "avgpool_backward_without_division", "each element gets the whole window gradient g",
        "Your backward pass gives every element of a window the window's whole gradient g. The output is the "
        "mean, in which each element has weight 1/k^2, so each element receives g / k^2.",
        _where(5, "Average pooling: forward and backward"), avgpool_backward_without_division),
]


# Inputs on which these mistakes show, for `course check` (probes.py): padding with all-negative
# inputs, integer inputs with tied maxima, overlapping windows, col2im with and without padding.
def _probes() -> list[Probe]:
    r = np.random.default_rng(505)
    probes = []
    for shape, k, s, p in [((1, 7, 7, 2), 3, 2, 1), ((2, 5, 6, 2), 3, 1, 1)]:
        attrs = {"kernel_size": k, "stride": s, "padding": p}
        out = windows(np.zeros(shape), k, s, p, 0.0).shape[:3] + (shape[3],)
        negative, ties = -1.0 - r.random(shape), r.integers(0, 3, shape).astype(np.float64)
        g = r.integers(-4, 5, out).astype(np.float64)
        shape_w = windows(np.zeros(shape), k, s, p, 0.0).shape
        no_pad = {"in_shape": list(shape), "kernel_size": k, "stride": s, "padding": 0}
        probes += [Probe("pool_col2im", forward_call("Col2Im", {"in_shape": list(shape), **attrs},
                                                     r.standard_normal(shape_w)), 1e-10, 1e-12),
                   Probe("pool_col2im", forward_call("Col2Im", no_pad, r.standard_normal(
                       windows(np.zeros(shape), k, s, 0, 0.0).shape)), 1e-10, 1e-12)]
        probes += [Probe("maxpool_forward", forward_call("MaxPool2d", attrs, negative), 1e-12, 0),
                   Probe("maxpool_mask", forward_call("FirstMaxMask", attrs, ties), 0, 0),
                   Probe("maxpool_mask", forward_call("FirstMaxMask", attrs, negative), 0, 0),
                   Probe("maxpool_backward", gradient_call("MaxPool2d", attrs, [ties], g), 1e-10, 1e-12),
                   Probe("avgpool_forward", forward_call("AvgPool2d", attrs, r.standard_normal(shape)), 1e-10, 1e-12),
                   Probe("avgpool_backward", gradient_call("AvgPool2d", attrs, [r.standard_normal(shape)], g),
                         1e-10, 1e-12)]
    return probes


# The other tasks whose code a task's probes run (probes.py): a gradient call builds its node with
# the student's forward pass first.
NEEDS = {"maxpool_backward": ("maxpool_forward", "maxpool_mask", "pool_col2im"),
         "avgpool_backward": ("avgpool_forward", "pool_col2im")}

PROBES = _probes()
