"""Misconceptions of 05_pooling_backward, each a wrong pooling written here in NumPy from its idea.

Layout as in course_lib: NHWC, square windows of size k, stride s (None: k), padding p.
"""
from __future__ import annotations

import numpy as np

from ..diagnosis import Call, Misconception
from ._calls import Probe, call_of, forward_call, forward_of, gradient_call, gradient_of, in_dtype

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


def _max_backward(call: Call, mask_of):
    """A MaxPool2d gradient (plain or through reverse mode) routed by ``mask_of(x, k, s, p)``."""
    found = gradient_of(call, "MaxPool2d")
    if found is not None:
        attrs, (x,), g = found
        k, s, p = _geometry(attrs)
    else:
        found = call_of(call, "course_lib.ops:max_pool2d")
        if found is None or found[2] is None:
            return None
        (x,), kwargs, g = found
        k, s, p = _geometry(kwargs)
    mask = mask_of(x, k, s, p)
    grad = in_dtype(scatter(mask * g.astype(np.float64)[:, :, :, None, :], x.shape, k, s, p), g)
    return [grad] if call.scenario == "gradient" else {"grads": [grad]}


def _every_maximum(x, k, s, p):
    w = windows(x, k, s, p, -np.inf)
    return (w == w.max(axis=3, keepdims=True)).astype(np.float64)


def _first_maximum_of_zero_padded(x, k, s, p):
    w = windows(x, k, s, p, 0.0)  # zero padding can be the maximum of a window of negative values
    first = w.argmax(axis=3)
    return (np.arange(k * k)[None, None, None, :, None] == first[:, :, :, None, :]).astype(np.float64)


def ties_to_every_maximum(call: Call):
    return _max_backward(call, _every_maximum)


def backward_mask_pads_with_zeros(call: Call):
    return _max_backward(call, _first_maximum_of_zero_padded)


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
    return f"section {section} of {NOTEBOOK}, \"{title}\"{more}"


MISCONCEPTIONS = [
    Misconception(
        "maxpool_forward", "maxpool_pads_with_zeros", "the padding is 0 instead of -inf",
        "Your max pooling pads with zeros. A border window whose real values are all negative then outputs 0, "
        "a value that is not in the input at all. Padding must never win the maximum: pad with -inf.",
        _where(3, "Max pooling, forward"), maxpool_pads_with_zeros),
    Misconception(
        "maxpool_backward", "ties_to_every_maximum", "every tied maximum receives the whole gradient",
        "Your mask is window == max, so when several elements tie for a window's maximum each of them receives "
        "the window's whole gradient, and the gradient is counted several times. The course (like PyTorch) gives "
        "it to the first maximum in row-major window order only; _first_max_mask finds it.",
        _where(4, "Max pooling, backward: routing", ' and section 7, "Ties"'), ties_to_every_maximum),
    Misconception(
        "maxpool_backward", "backward_mask_pads_with_zeros",
        "the backward pass looks for the maxima in zero-padded windows",
        "Your backward pass finds each window's maximum in windows padded with 0. For a border window of negative "
        "values the padding wins, so the window's gradient goes to a padded position and is cropped away: those "
        "inputs get no gradient. Find the maxima exactly as the forward pass does, with -inf padding.",
        _where(4, "Max pooling, backward: routing"), backward_mask_pads_with_zeros),
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
# inputs, integer inputs with tied maxima, overlapping windows.
def _probes() -> list[Probe]:
    r = np.random.default_rng(505)
    probes = []
    for shape, k, s, p in [((1, 7, 7, 2), 3, 2, 1), ((2, 5, 6, 2), 3, 1, 1)]:
        attrs = {"kernel_size": k, "stride": s, "padding": p}
        out = windows(np.zeros(shape), k, s, p, 0.0).shape[:3] + (shape[3],)
        negative, ties = -1.0 - r.random(shape), r.integers(0, 3, shape).astype(np.float64)
        g = r.integers(-4, 5, out).astype(np.float64)
        probes += [Probe("maxpool_forward", forward_call("MaxPool2d", attrs, negative), 1e-12, 0),
                   Probe("maxpool_backward", gradient_call("MaxPool2d", attrs, [ties], g), 1e-12, 1e-12),
                   Probe("maxpool_backward", gradient_call("MaxPool2d", attrs, [negative], g), 1e-12, 1e-12),
                   Probe("avgpool_forward", forward_call("AvgPool2d", attrs, r.standard_normal(shape)), 1e-10, 1e-12),
                   Probe("avgpool_backward", gradient_call("AvgPool2d", attrs, [r.standard_normal(shape)], g),
                         1e-10, 1e-12)]
    return probes


# The other tasks whose code a task's probes run (probes.py): a gradient call builds its node with
# the student's forward pass first.
NEEDS = {"maxpool_backward": ("maxpool_forward",), "avgpool_backward": ("avgpool_forward",)}

PROBES = _probes()
