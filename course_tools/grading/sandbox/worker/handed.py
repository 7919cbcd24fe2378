"""The caller's arrays, read back after the student's code ran.

A function must leave its caller's arrays as they were: a backward pass that rotates the
kernel in place gives the right gradient once and corrupts the kernel for every later use.
The worker does not judge this (a notebook can replace the worker's functions): a scenario
hands its array inputs to the student's code through ``hand`` and calls ``read_back`` once that
code has run; main.serve sends the values read back beside the result, and the grader compares
them with what it sent (session/handed.py). The order is the request's: see there.
"""
from __future__ import annotations

import numpy as np

from .values import to_numpy

_handed: list = []
_read: list | None = None


def hand(obj):
    """Note ``obj`` (a NumPy array, an NDArray or a Tensor made from a request's array) as handed
    to the student's code; returns it."""
    _handed.append(obj)
    return obj


def read_back() -> None:
    """Read the handed objects' values now (after the student's code ran, before the scenario
    itself gives them new values, as re-evaluation does)."""
    global _read
    _read = [_value_of(obj) for obj in _handed]


def take() -> list | None:
    """The values read back (None when the scenario handed nothing), and a fresh start."""
    global _read
    values, _read = _read, None
    _handed.clear()
    return values


def _value_of(obj):
    """The object's values as a fresh NumPy array, through the worker's one conversion
    (values.to_numpy); None when it no longer holds an array (a Tensor whose data the
    student's code replaced with something else)."""
    try:
        return np.array(to_numpy(obj, "an array handed to the student's code"))
    except Exception:  # noqa: BLE001 - whatever the student's code left there
        return None
