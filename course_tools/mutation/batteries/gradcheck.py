"""Batteries of 06_gradient_checking: central_difference, the step-size sweep, the planted-bug checks.

The planted-bug checks are judged by their verdicts (accepted, or the error they raise) on
backward passes: the hidden suite's planted bugs (autograder/06_gradient_checking/planted_bugs.py),
both correct implementations, and a second set of realistic bugs kept apart from the first
(held_out_bugs.py), so that "it still rejects the planted bugs" is not the only evidence.
"""
from __future__ import annotations

import importlib.util

import numpy as np
from hypothesis import strategies as st

from ...build import ROOT
from ..observe import observe
from . import held_out_bugs
from .battery import Battery
from .inputs import shapes, values

# ---------------------------------------------------------------- central_difference
_FUNCTIONS = {
    "sum of cubes": lambda x: np.sum(x ** 3),
    "sin of the first": lambda x: np.sin(x.reshape(-1)[0]) if x.size else 0.0,
    "a NumPy scalar": lambda x: np.float32(np.sum(x)),
    "NaN": lambda x: np.nan,
    "inf": lambda x: np.sum(x) * np.inf,
}


@st.composite
def _central_case(draw):
    dtype = draw(st.sampled_from((np.float16, np.float32, np.float64, np.int64)))
    shape = draw(shapes(0, 3, max_side=3))
    x = draw(values(dtype, shape, finite=True)) if dtype != np.int64 else np.arange(int(np.prod(shape))).reshape(shape)
    return {"f": draw(st.sampled_from(sorted(_FUNCTIONS))), "x": x, "h": draw(st.sampled_from([1e-6, 1e-3, 0.5]))}


def _central_difference(ns, case):
    seen = []

    def f(v):
        seen.append((v.dtype.name, v.shape))
        return _FUNCTIONS[case["f"]](v)
    x = case["x"].copy()
    result = observe(lambda: ns["central_difference"](f, x, case["h"]), (x,))
    return result + (tuple(seen),)


# ---------------------------------------------------------------- best_step_size (a script cell)
def _sweep(ns, case):
    import matplotlib.pyplot as plt

    theta0, hs = case
    names = dict(ns, theta0=theta0, hs=np.array(hs))
    plt.close("all")
    try:
        exec(compile(ns["__cell_source__"], "best_step_size", "exec"), names)
        outcome = ("ran",)
    except Exception as err:
        outcome = ("raises", type(err).__name__)
    figures = len(plt.get_fignums())
    plt.close("all")
    results = tuple(names.get(k) for k in ("errors64", "errors32", "best_h64", "best_h32"))
    return observe(lambda: (outcome, results, ("figures", figures), ("fig", "fig" in names)))


# ---------------------------------------------------------------- planted_bug_checks
def _planted_bugs():
    path = ROOT / "autograder" / "06_gradient_checking" / "planted_bugs.py"
    spec = importlib.util.spec_from_file_location("_planted_bugs_06", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    conv = {"correct": module.conv_correct, **{n: getattr(module, n) for n in module.CONV_BUGS}}
    pool = {"correct": module.pool_correct, **{n: getattr(module, n) for n in module.POOL_BUGS}}
    return conv, pool


def _bugs(kind):
    conv, pool = _planted_bugs()
    planted = conv if kind == "conv" else pool
    held_out = held_out_bugs.CONV if kind == "conv" else held_out_bugs.POOL
    return {**planted, **{f"held out: {n}": fn for n, fn in held_out.items()}}


def _planted_bug_check(ns, case):
    kind, name = case[0], case[1]
    if kind == "finite":
        array = case[2].copy()
        return observe(lambda: ns["check_finite"]("x", array), (array,))
    check = ns["check_conv_backward"] if kind == "conv" else ns["check_pool_backward"]
    return observe(lambda: check(_bugs(kind)[name]))


_FINITE_FIXED = tuple(("finite", "", a) for a in (
    np.linspace(-1e30, 1e30, 7), np.arange(5), np.array([1.0, np.nan]), np.array([[np.inf, 0.0]]),
    np.array(-np.inf), np.zeros((0, 3)), np.array([60000.0, np.inf], dtype=np.float16),
    np.array([True, False]), np.array([1 + 1j, np.nan * 1j])))


def _finite_case():
    dtype = st.sampled_from((np.float16, np.float32, np.float64))
    return st.builds(lambda a: ("finite", "", a), dtype.flatmap(lambda d: shapes(0, 3).flatmap(lambda s: values(d, s))))


def _select(mutant):
    """Region 0 is check_finite, 1 check_conv_backward, 2 check_pool_backward (the cell's order)."""
    if mutant.region == 0:
        return _FINITE_FIXED, True
    kind = "conv" if mutant.region == 1 else "pool"
    return tuple((kind, name) for name in _bugs(kind)), False


_PLANTED_CELLS = ("conv_helpers", "pool_helpers", "lent_central_difference", "gradient_check_code")
BATTERIES = {
    "gradient_check": Battery(_central_difference, cases=_central_case()),
    "best_step_size": Battery(_sweep, cells=("sweep_setup",), fixed=(
        (1.25, tuple(10.0 ** (-np.arange(2, 25) / 2))), (0.3, (1e-1, 1e-4, 1e-8)), (1.25, ())), cases=None),
    "planted_bug_checks": Battery(_planted_bug_check, cells=_PLANTED_CELLS, cases=_finite_case(), select=_select),
}
