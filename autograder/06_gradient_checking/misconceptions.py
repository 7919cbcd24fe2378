"""Misconceptions of 06_gradient_checking: wrong finite differences, written here from their idea.

central_difference is graded through the central_difference_of scenario (a catalogue of
functions in worker/scenarios.py, imported here so both sides use the same functions), and the
step-size sweep through the arrays the notebook stored (errors64, errors32).
"""
from __future__ import annotations

import numpy as np

from course_tools.grading.api import (Call, FUNCTIONS, Misconception, Probe, notebook_place, request_call,
                                      request_of)

NOTEBOOK = "06_gradient_checking"
WHERE_CENTRAL = notebook_place("section 1", NOTEBOOK, "Two oracles for a gradient", " (Central differences)")
WHERE_SWEEP = f"sections 3 and 4 of {NOTEBOOK}, \"Why central differences work\" and \"Measuring the best step size\""


def _probes(difference):
    """A central_difference_of misconception: ``difference(f, x, i, h) -> float`` estimates the
    partial derivative i, probing the float64 array x in place (as the student's loop does)."""
    def compute(call: Call):
        args = request_of(call, "central_difference_of")
        if args is None:
            return None
        name, x, h = args
        f, x = FUNCTIONS[name], np.array(x, dtype=np.float64)
        flat = x.reshape(-1)
        grad = np.array([difference(f, x, flat, i, h) for i in range(flat.size)]).reshape(x.shape)
        return {"grad": grad}
    return compute


def _divided_by_h(f, x, flat, i, h):
    saved = flat[i]
    flat[i] = saved + h
    plus = float(f(x))
    flat[i] = saved - h
    minus = float(f(x))
    flat[i] = saved
    return (plus - minus) / h  # the two probes are 2h apart


def _forward(f, x, flat, i, h):
    saved = flat[i]
    base = float(f(x))
    flat[i] = saved + h
    plus = float(f(x))
    flat[i] = saved
    return (plus - base) / h  # first order: off by h f''/2


def _not_put_back(f, x, flat, i, h):
    saved = flat[i]
    flat[i] = saved + h
    plus = float(f(x))
    flat[i] = saved - h
    minus = float(f(x))
    return (plus - minus) / (2 * h)  # element i stays at x_i - h for every later probe


# The sweep of section 4: J(theta) = exp(theta) sin(theta) at theta0 = 1.25, and the step sizes hs,
# as the notebook's locked cell `sweep_setup` defines them.
THETA0 = 1.25
HS = 10.0 ** (-np.arange(2, 25) / 2)


def _j(theta):
    return np.exp(theta) * np.sin(theta)


def sweep(dtype, central: bool = True) -> np.ndarray:
    """|difference - J'(theta0)| for every h of HS, each step in ``dtype``: central or forward."""
    exact = float(np.exp(THETA0) * (np.sin(THETA0) + np.cos(THETA0)))
    t, errors = dtype(THETA0), []
    for h in HS:
        step = dtype(h)
        estimate = (_j(t + step) - _j(t - step)) / (dtype(2) * step) if central else (_j(t + step) - _j(t)) / step
        errors.append(abs(float(estimate) - exact))
    return np.array(errors)


def forward_difference_sweep(call: Call):
    args = request_of(call, "variable")
    if args is None or args[0] not in ("errors64", "errors32"):
        return None
    return sweep(np.float64 if args[0] == "errors64" else np.float32, central=False)


MISCONCEPTIONS = [
    Misconception(
        "gradient_check", "central_difference_divided_by_h", "the central difference is divided by h, not 2h",
        "Your probes x + h and x - h are 2h apart, so the difference of the two values must be divided by 2h. "
        "Divided by h, every partial derivative comes out twice as large.",
        WHERE_CENTRAL, _probes(_divided_by_h)),
    Misconception(
        "gradient_check", "forward_difference", "a one-sided (forward) difference instead of a central one",
        "Your central_difference computes (f(x + h) - f(x)) / h. That one-sided difference keeps the h f''/2 term "
        "of the Taylor expansion: its error shrinks only like h, and on curved functions it is far above the "
        "tolerance. The central difference (f(x + h) - f(x - h)) / 2h cancels that term (error ~ h^2).",
        WHERE_CENTRAL, _probes(_forward)),
    Misconception(
        "gradient_check", "element_not_put_back", "a probed element is not put back",
        "After probing element i at x_i + h and x_i - h, your loop leaves it at x_i - h, so every later probe is "
        "taken at a shifted point. On a function whose elements do not interact (sum(x**3)) that changes "
        "nothing, but when they do, every later partial derivative is a little off. Restore the saved value "
        "before moving on.",
        WHERE_CENTRAL, _probes(_not_put_back)),
    Misconception(
        "best_step_size", "forward_difference_sweep", "the sweep measures a forward difference",
        "Your errors64 and errors32 are the errors of (J(theta0 + h) - J(theta0)) / h, a one-sided difference, "
        "not of the central difference of the task. Its truncation error is h J''/2, first order in h, so the "
        "curves have slope 1 on the right instead of 2, and their minima sit near sqrt(eps) rather than "
        "eps^(1/3).",
        WHERE_SWEEP, forward_difference_sweep),
]


# Inputs on which these mistakes show, for `course check` (probes.py). The sweep's right values
# are computed here (the notebook's variables have no reference run).
def _probes() -> list[Probe]:
    r = np.random.default_rng(606)
    differences = [("sum_of_cubes", (2, 3), 1e-5), ("coupled", (5,), 1e-5), ("coupled", (2, 3), 1e-5),
                   ("sin_dot", (4,), 1e-6)]
    probes = [Probe("gradient_check", request_call("central_difference_of", name, r.uniform(-1.5, 1.5, shape), h),
                    1e-6, 1e-7) for name, shape, h in differences]
    probes += [Probe("best_step_size", request_call("variable", "errors64"), 1e-3, 0,
                     expected=lambda: sweep(np.float64)),
               Probe("best_step_size", request_call("variable", "errors32"), 1e-2, 0,
                     expected=lambda: sweep(np.float32))]
    return probes


PROBES = _probes()
