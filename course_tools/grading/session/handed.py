"""The grader's side of the worker's handed.py: a function graded through forward, forward_view,
gradient or call must leave the arrays it was given as they were.

The worker reads the arrays it handed to the student's code back after the call and sends
them beside the result; the grader compares them with the values it sent itself. A change is
the check's failure, naming the array (issue 37: a backward pass that rotated the caller's
kernel in place kept full marks, since each check gave it fresh arrays).
"""
from __future__ import annotations

import numpy as np

from .errors import StudentError


def handed_arrays(scenario: str, args: list, options: dict) -> list[tuple[str, np.ndarray]] | None:
    """The arrays the worker's ``scenario`` hands to the student's code, named, in the order it
    reads them back (worker/scenarios.py); None for a scenario that hands none."""
    if scenario in ("forward", "forward_view"):
        _, _, arrays = args
        return [(f"its input {i}", a) for i, a in enumerate(arrays)]
    if scenario == "gradient":
        _, _, arrays, out_grad = args
        named = [(f"its input {i}", a) for i, a in enumerate(arrays)] + [("out_grad", out_grad)]
        if options.get("output") is not None:
            named.append(("the node's value (the forward's output)", options["output"]))
        return named
    if scenario == "call":
        _, arrays, _, _, out_grad = args
        named = [(f"its argument {i}", a) for i, a in enumerate(arrays) if isinstance(a, np.ndarray)]
        return named + ([("out_grad", out_grad)] if out_grad is not None else [])
    return None


def check_unchanged(what: str, named: list[tuple[str, np.ndarray]], after) -> None:
    """Raise StudentError when an array read back differs from what the grader sent."""
    if not isinstance(after, list) or len(after) != len(named):
        raise StudentError(f"{what} cannot be graded: the arrays it was given could not be read back after "
                           f"the call")
    for (label, sent), back in zip(named, after):
        sent = np.asarray(sent)
        if not _same(sent, back):
            raise StudentError(f"{what} changed {label} (shape {tuple(sent.shape)}) in place: the caller's "
                               f"arrays must be as they were after the call, since the caller uses them again. "
                               f"Change a copy instead.")


def _same(sent: np.ndarray, back) -> bool:
    if not isinstance(back, np.ndarray) or back.shape != sent.shape:
        return False
    floats = sent.dtype.kind in "fc" and back.dtype.kind in "fc"
    try:
        return bool(np.array_equal(sent, back, equal_nan=floats))
    except TypeError:
        return False
