# Generated from course_lib/scaler_runs.py for the release of 01_forward_ops by `python -m course_tools.build` - do not edit.
"""Reading a loss-scaled training run back from the scales it recorded (07's precision check).

A run records ``scale_value`` after every update. A step overflowed exactly when the scale dropped
after it, so the recorded scales say which steps were skipped, and the same overflows can be
replayed through any LossScaler to see whether the run used that scaler once per step.
"""
from __future__ import annotations

import numpy as np


def skipped_mask(scales, init_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """(scale each update started with, whether it was skipped): two arrays of len(scales)."""
    scales = np.asarray(scales, dtype=float)
    before = np.concatenate([[init_scale], scales[:-1]])
    return before, scales < before


def steps_taken_at(scales, init_scale: float, threshold: float = 2.0 ** 16) -> tuple[int, int]:
    """(taken, skipped): how many updates started with a scale >= threshold and were taken / skipped."""
    before, skipped = skipped_mask(scales, init_scale)
    high = before >= threshold
    return int(np.sum(high & ~skipped)), int(np.sum(high & skipped))


def replayed_by(scaler_class, scales, init_scale: float, growth_interval: int) -> tuple[np.ndarray, int]:
    """``scaler_class(init_scale=..., growth_interval=...)`` driven through the overflows that ``scales``
    implies, one update per step: (its scale after each update, its skipped_steps). A run that
    updated that scaler once per step and recorded scale_value after it replays exactly."""
    scaler = scaler_class(init_scale=init_scale, growth_interval=growth_interval)
    replay = []
    for skipped in skipped_mask(scales, init_scale)[1]:
        scaler.update(not skipped)
        replay.append(scaler.scale_value)
    return np.array(replay, dtype=float), scaler.skipped_steps


def replay_mismatch(scaler_class, what: str, scales, skipped_steps: int, init_scale: float,
                    growth_interval: int) -> str | None:
    """None when the run ``what`` recorded the scales and skipped steps that ``scaler_class`` gives
    for its overflows, else a message naming the first update where they part."""
    scales = np.asarray(scales, dtype=float)
    if scales.ndim != 1 or scales.size == 0:
        return f"{what}: no scales recorded"
    replay, replay_skipped = replayed_by(scaler_class, scales, init_scale, growth_interval)
    wrong = np.flatnonzero(scales != replay)
    if wrong.size:
        i = wrong[0]
        return (f"{what}: after update {i + 1} the run recorded the scale {scales[i]:g}, but your LossScaler, given "
                f"the same overflows, is at {replay[i]:g}: call scaler.update(finite) once per step and record "
                f"scale_value after it")
    if skipped_steps != replay_skipped:
        return f"{what}: skipped_steps is {skipped_steps}, but the scale backed off {replay_skipped} times"
    return None
