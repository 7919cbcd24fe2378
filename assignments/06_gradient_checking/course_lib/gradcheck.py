# Generated from course_lib/gradcheck.py for the release of 06_gradient_checking by `python -m course_tools.build` - do not edit.
"""Numerical gradient checking (assignment 06).

Central differences: f'(x) ~ (f(x + h) - f(x - h)) / 2h. By Taylor's theorem the error of
this estimate is h^2 f'''(x) / 6 (truncation), but subtracting two nearly equal numbers costs
about eps_machine * |f| / h (rounding): too large an h is inaccurate, too small an h is noisy.
In float64 an h near 1e-5 .. 1e-6 balances the two; in float32 near 1e-2 .. 1e-3.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .autograd import Tensor
from .backend import Device, default_device
from .host import to_numpy


def rel_error(a, b) -> float:
    """max over elements of |a - b| / max(1, |a|, |b|): absolute error for small values,
    relative error for large ones. a, b: arrays, Tensors or NDArrays (on any device) of one
    shape; compared on the host in float64."""
    a, b = to_numpy(a, "rel_error's first argument"), to_numpy(b, "rel_error's second argument")
    if a.shape != b.shape:
        raise ValueError(f"rel_error: shapes {a.shape} and {b.shape} differ")
    if a.size == 0:
        return 0.0
    a, b = a.astype(np.float64), b.astype(np.float64)
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return float(np.max(np.abs(a - b) / scale))


def central_difference(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The numerical gradient of a scalar function f at x (float64), one element at a time.

    x: any shape; returns an array of x's shape. x is restored after each probe.
    """
    raise NotImplementedError("gradient_check: not implemented yet; you write it in assignment 06_gradient_checking")


def gradient_check(f: Callable[..., Tensor], *args, h: float = 1e-6, tol: float = 1e-6,
                   seed: int = 0, device: Device | None = None) -> list[float]:
    """Compare autograd's gradients of ``f(*args)`` with central differences, in float64.

    f maps Tensors to a Tensor of any shape; it is reduced to a scalar by a fixed random
    projection so every output element matters. args: arrays or Tensors (converted to float64).
    device: where ``f`` computes; by default the device of the first Tensor argument, else the
    default device. The differences are taken on the host (``central_difference``).
    Returns the rel_error of each argument; raises AssertionError naming the worst one if it
    is above ``tol``.
    """
    if device is None:
        device = next((a.device for a in args if isinstance(a, Tensor)), None) or default_device()
    values = [np.array(to_numpy(a, f"argument {i}"), dtype=np.float64) for i, a in enumerate(args)]

    def tensor(value, requires_grad=True):
        return Tensor(value, device=device, dtype="float64", requires_grad=requires_grad)

    out_shape = f(*[tensor(v) for v in values]).shape
    projection = np.random.default_rng(seed).standard_normal(out_shape)

    def scalar(i):
        def at(x):
            inputs = [tensor(x if j == i else v, requires_grad=False) for j, v in enumerate(values)]
            return float(np.sum(f(*inputs).numpy() * projection))
        return at

    tensors = [tensor(v) for v in values]
    out = f(*tensors)
    out.backward(tensor(projection, requires_grad=False))
    errors = []
    for i, (t, v) in enumerate(zip(tensors, values)):
        numeric = central_difference(scalar(i), v, h)
        analytic = t.grad.numpy() if t.grad is not None else np.zeros_like(v)
        errors.append(rel_error(analytic, numeric))
    worst = int(np.argmax(np.nan_to_num(errors, nan=np.inf))) if errors else 0
    if errors and not errors[worst] <= tol:  # NaN compares False with everything: it fails too
        raise AssertionError(f"gradient check failed for argument {worst} (shape {values[worst].shape}): "
                             f"rel_error {errors[worst]:.3e} > tol {tol:.1e}")
    return errors
