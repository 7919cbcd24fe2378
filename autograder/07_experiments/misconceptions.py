"""Misconceptions of 07_experiments: the naive convolution's layouts and the loss scaler's rules.

The naive conv is checked through the notebook's own ``naive_conv`` (a "call" of "student:
naive_conv" with out_grad: {"out", "grads": [dx, dW, db]}); its wrong versions are computed here
with PyTorch. The loss scaler is driven step by step (``StudentSession.loss_scaler_run``), and its
wrong versions are small scalers written here, replayed on the same steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from course_tools.grading.api import (Call, Misconception, Probe, call_of, function_call, notebook_place,
                                      request_call, request_of, torch_conv_nchw)

NOTEBOOK = "07_experiments"
WHERE_LAYOUTS = notebook_place("Part 1", NOTEBOOK, "Layouts: the one thing to get right")
WHERE_SCALER = notebook_place("Part 3", NOTEBOOK, "Mixed precision with dynamic loss scaling")


# ------------------------------------------------------------------------------ naive conv layouts
def _naive_conv_call(call: Call):
    found = call_of(call, "student:naive_conv")
    if found is None or found[2] is None:
        return None
    (x, w_hwio, b), kwargs, g = found
    return x, w_hwio, b, kwargs.get("padding", 0), g


def _torch_conv(x, w_oihw, b, padding, g):
    """(out, dx, dW in OIHW, db) of PyTorch's conv2d, float64."""
    return torch_conv_nchw(x, w_oihw, 1, padding, 1, g, b)


def kernel_spatially_transposed(call: Call):
    found = _naive_conv_call(call)
    if found is None:
        return None
    x, w, b, p, g = found
    # W.transpose(3, 2, 1, 0) has the naive shape (C_out, C_in, K, K) but u and v swapped
    out, *_ = _torch_conv(x, w.transpose(3, 2, 1, 0), b, p, g)
    return {"out": out}


def dw_back_in_wrong_layout(call: Call):
    found = _naive_conv_call(call)
    if found is None:
        return None
    x, w, b, p, g = found
    out, dx, dw_oihw, db = _torch_conv(x, w.transpose(3, 2, 0, 1), b, p, g)
    # dw.transpose(3, 2, 1, 0) of the naive (C_out, C_in, K, K) has the shape (K, K, C_in, C_out) but u, v swapped
    return {"out": out, "grads": [dx, dw_oihw.transpose(3, 2, 1, 0), db]}


# ------------------------------------------------------------------------------ the loss scaler
@dataclass
class Scaler:
    """LossScaler's update rule with one switch per mistake (all False: the right rule)."""
    init_scale: float = 2.0 ** 15
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 100
    min_scale: float = 1.0
    never_grows: bool = False
    grows_late: bool = False           # > growth_interval instead of >=
    keeps_counting: bool = False       # good_steps not reset after a growth
    counts_overflow_twice: bool = False  # unscale counts a skipped step too
    no_floor: bool = False             # backs off below min_scale

    def __post_init__(self):
        self.scale, self.good, self.skipped = float(self.init_scale), 0, 0

    def step(self, finite: bool) -> None:
        if not finite and self.counts_overflow_twice:
            self.skipped += 1          # counted once in unscale...
        if finite:
            self.good += 1
            due = self.good > self.growth_interval if self.grows_late else self.good >= self.growth_interval
            if due:
                if not self.never_grows:
                    self.scale *= self.growth_factor
                if not self.keeps_counting:
                    self.good = 0
        else:
            self.skipped += 1          # ...and again in update
            self.good = 0
            self.scale = self.scale * self.backoff_factor
            if not self.no_floor:
                self.scale = max(self.min_scale, self.scale)


def _replay(**mistake):
    """A loss_scaler_run misconception: the columns the scaler with ``mistake`` gives on the same steps."""
    def compute(call: Call):
        args = request_of(call, "loss_scaler_run")
        if args is None:
            return None
        settings, steps = args
        scaler = Scaler(**settings, **mistake)
        columns = {"scale": [], "good": [], "skipped": [], "finite": []}
        for grads in steps:
            finite = all(np.isfinite(np.asarray(g, dtype=np.float64)).all() for g in grads)
            scaler.step(finite)
            for key, value in (("scale", scaler.scale), ("good", scaler.good), ("skipped", scaler.skipped),
                               ("finite", finite)):
                columns[key].append(float(value))
        return {key: np.array(values) for key, values in columns.items()}
    return compute


MISCONCEPTIONS = [
    Misconception(
        "experiment_implementations", "kernel_spatially_transposed",
        "the kernel is converted with transpose(3, 2, 1, 0)",
        "Your NaiveConv converts the (K, K, C_in, C_out) kernel with transpose(3, 2, 1, 0). That has the right "
        "shape (C_out, C_in, K, K), but its last two axes are (v, u) instead of (u, v): the kernel is spatially "
        "transposed, so the naive model computes another function. Use transpose(3, 2, 0, 1).",
        WHERE_LAYOUTS, kernel_spatially_transposed),
    Misconception(
        "experiment_implementations", "dw_back_in_wrong_layout", "dW is converted back with transpose(3, 2, 1, 0)",
        "Your NaiveConvBackward turns the naive (C_out, C_in, K, K) kernel gradient back with transpose(3, 2, 1, 0): "
        "the shape (K, K, C_in, C_out) is right but u and v are swapped, so dW is spatially transposed. The "
        "inverse of transpose(3, 2, 0, 1) is transpose(2, 3, 1, 0).",
        WHERE_LAYOUTS, dw_back_in_wrong_layout),
    Misconception(
        "loss_scaler", "scaler_never_grows", "the scale never grows",
        "Your scaler backs off after an overflow but never grows again: after growth_interval finite steps in a "
        "row the scale must be multiplied by growth_factor (and the count restarted). Without growth the scale "
        "only ever shrinks, so small float16 gradients underflow again after the first overflows.",
        WHERE_SCALER, _replay(never_grows=True)),
    Misconception(
        "loss_scaler", "scaler_grows_one_step_late", "the scale grows one finite step too late",
        "Your update grows the scale when good_steps exceeds growth_interval (>) instead of when it reaches it "
        "(>=), so every growth comes one finite step late.",
        WHERE_SCALER, _replay(grows_late=True)),
    Misconception(
        "loss_scaler", "good_steps_not_reset_after_growth", "good_steps is not reset after a growth",
        "After a growth your update keeps counting good_steps from where it was, so once it has reached "
        "growth_interval the scale grows again on every finite step. Restart the count at 0 after growing, as "
        "after an overflow.",
        WHERE_SCALER, _replay(keeps_counting=True)),
    Misconception(
        "loss_scaler", "scale_without_floor", "the scale backs off below min_scale",
        "After an overflow your update multiplies the scale by backoff_factor without the floor: the scale must "
        "never fall below min_scale, so the new scale is max(min_scale, scale * backoff_factor). Without it a "
        "run of overflows drives the scale towards 0.",
        WHERE_SCALER, _replay(no_floor=True)),
    Misconception(
        "loss_scaler", "overflow_counted_twice", "an overflow is counted twice in skipped_steps",
        "Your skipped_steps goes up by 2 for each overflow: once in unscale and once in update. unscale only "
        "reports whether the gradients are finite; update, which the trainer calls once per step, counts the "
        "skipped step.",
        WHERE_SCALER, _replay(counts_overflow_twice=True)),
]


# Inputs on which these mistakes show, for `course check` (probes.py).
def _right_naive_conv(x, w_hwio, b, padding, g):
    out, dx, dw, db = _torch_conv(x, w_hwio.transpose(3, 2, 0, 1), b, padding, g)
    return {"out": out, "grads": [dx, dw.transpose(2, 3, 1, 0), db]}


def _probes() -> list[Probe]:
    r = np.random.default_rng(707)
    probes = []
    for n, c_in, h, w, c_out, k, p in [(2, 2, 5, 4, 2, 3, 1), (1, 2, 6, 5, 3, 3, 0)]:
        x, kernel = r.standard_normal((n, c_in, h, w)), r.standard_normal((k, k, c_in, c_out))
        bias = r.standard_normal(c_out)
        g = r.standard_normal((n, c_out, h + 2 * p - k + 1, w + 2 * p - k + 1))
        probes.append(Probe("experiment_implementations",
                            function_call("student:naive_conv", x, kernel, bias, as_tensors=True, out_grad=g,
                                          padding=p),
                            1e-9, 1e-9,
                            expected=lambda args=(x, kernel, bias, p, g): _right_naive_conv(*args)))
    finite, overflow = [np.array([1.0, -2.0], np.float16)], [np.array([np.inf], np.float16)]
    runs = [({"init_scale": 64.0, "growth_interval": 3},
             [True] * 7 + [False, False] + [True] * 4 + [False] + [True] * 9),
            ({"init_scale": 24.0, "growth_factor": 1.5, "backoff_factor": 0.25, "growth_interval": 3, "min_scale": 2.0},
             [False, False, True, True, True, False, True, True, True, True, False, False, True]),
            ({"init_scale": 4.0, "growth_interval": 2}, [False] * 4 + [True] * 5 + [False] * 3)]
    for settings, flags in runs:
        steps = [finite if f else overflow for f in flags]
        probes.append(Probe("loss_scaler", request_call("loss_scaler_run", settings, steps), 1e-12, 1e-8))
    return probes


PROBES = _probes()
