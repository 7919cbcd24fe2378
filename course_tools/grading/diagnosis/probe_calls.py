"""Scenario calls, read and made: the inputs a wrong implementation needs, and probe inputs.

A misconception answers only the calls it understands: each reader below returns the inputs of
one kind of call, or None for any other call (and the misconception then returns None: "does not
apply"). The argument layouts are those of ``StudentSession``'s wrappers (session.py), and the
builders at the end make calls in those layouts (the probes of `course check`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .diagnosis import Call


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


# ------------------------------------------------------------------------------ probes
@dataclass(frozen=True)
class Probe:
    """An input on which a task's misconceptions show, for `course check` (probes.py): the call, the
    tolerance of a comparison, and the right answer when the reference scenario cannot give it
    (a function of no arguments; None: run the scenario on the reference course_lib)."""
    task: str
    call: Call
    rtol: float = 1e-6
    atol: float = 1e-8
    expected: Callable[[], object] | None = None


def forward_call(op: str, attrs: dict, *arrays) -> Call:
    return Call("forward", (op, attrs, list(arrays)), {})


def gradient_call(op: str, attrs: dict, arrays: list, out_grad, reevaluate=None) -> Call:
    options = {} if reevaluate is None else {"reevaluate": reevaluate}
    return Call("gradient", (op, attrs, list(arrays), out_grad), options)


def function_call(target: str, *arrays, as_tensors=False, out_grad=None, reevaluate=None, **kwargs) -> Call:
    return Call("call", (target, list(arrays), kwargs, as_tensors, out_grad),
                {} if reevaluate is None else {"reevaluate": reevaluate})


def request_call(scenario: str, *args) -> Call:
    return Call(scenario, tuple(args), {})
