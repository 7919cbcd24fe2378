"""Reading a scenario ``Call`` back into the inputs a wrong implementation needs.

A misconception answers only the calls it understands: each helper below returns the inputs of
one kind of call, or None for any other call (and the misconception then returns None: "does not
apply"). The argument layouts are those of ``StudentSession``'s wrappers (session.py).
"""
from __future__ import annotations

import numpy as np

from ..diagnosis import Call


def forward_of(call: Call, op: str):
    """(attrs, arrays) of ``student.forward(op, attrs, *arrays)``, else None."""
    if call.scenario == "forward" and call.args[0] == op:
        return call.args[1], [np.asarray(a) for a in call.args[2]]
    return None


def gradient_of(call: Call, op: str):
    """(attrs, arrays, out_grad) of a plain ``student.gradient(op, ...)``, else None (a call with
    ``reevaluate`` has another result structure; see ``reevaluated_gradient_of``)."""
    if call.scenario == "gradient" and call.args[0] == op and "reevaluate" not in call.options:
        return call.args[1], [np.asarray(a) for a in call.args[2]], np.asarray(call.args[3])
    return None


def reevaluated_gradient_of(call: Call, op: str):
    """(attrs, arrays, out_grad, second out_grad) of ``student.gradient(op, ..., reevaluate=...)``."""
    if call.scenario == "gradient" and call.args[0] == op and "reevaluate" in call.options:
        return (call.args[1], [np.asarray(a) for a in call.args[2]], np.asarray(call.args[3]),
                np.asarray(call.options["reevaluate"]))
    return None


def call_of(call: Call, target: str):
    """(arrays, kwargs, out_grad) of ``student.call(target, *arrays, ...)``, else None."""
    if call.scenario == "call" and call.args[0] == target:
        arrays, kwargs, _as_tensors, out_grad = call.args[1], call.args[2], call.args[3], call.args[4]
        return [np.asarray(a) for a in arrays], dict(kwargs), None if out_grad is None else np.asarray(out_grad)
    return None


def request_of(call: Call, scenario: str):
    """The arguments of a ``student.request(scenario, *args)``, else None."""
    return call.args if call.scenario == scenario else None


def in_dtype(value, like):
    """``value`` (computed in float64) in the dtype the student's code would return for ``like``."""
    return np.asarray(value).astype(np.asarray(like).dtype)
