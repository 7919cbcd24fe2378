"""The equivalence battery of each task that autograder/equivalent_mutants.toml lists mutants of.

    battery_for("backward_relu") -> Battery | None

A Battery says which notebook cells its task's cell needs besides the setup cell (``cells``),
the fixed inputs to try first (``fixed``: the hidden suite's own configurations), a Hypothesis
strategy of further inputs (``cases``) and ``run(namespace, case)``: call the version of the task
that is in place (its ``@implements`` installed, its names in ``namespace``) on a fresh copy of
the case's arguments and return observe.observe(...) of it. One module per assignment.
"""
from __future__ import annotations

from .battery import Battery

__all__ = ["Battery", "battery_for"]


def battery_for(task: str) -> Battery | None:
    from . import conv, experiments, gradcheck, ndarray, ops, pooling

    for module in (ops, ndarray, conv, pooling, gradcheck, experiments):
        if task in module.BATTERIES:
            return module.BATTERIES[task]
    return None
