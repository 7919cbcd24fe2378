# Generated from course_lib/backward_checks.py for the release of 03_ndarray by `python -m course_tools.build` - do not edit.
"""Visible checks of assignment 02: an op's ``gradient``, and ``.backward()`` of a whole function.

Both compare with finite differences of NumPy's forward functions along random directions V:
for the scalar l(x) = sum(np_fn(x) * out_grad), (l(x + hV) - l(x - hV)) / 2h ~ <gradient, V>.
Three random directions per input catch almost every wrong gradient. (Assignment 06 studies
numerical gradient checks in depth; this module does not use its code.)

    check_gradient("divide", ops.divide, lambda x, y: x / y, [a, b], needs={0: [1], 1: [0, 1]})
    backward_check(lambda x, W: ops.relu(x @ W), x, W)
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .autograd import Tensor


def reaches(start, target) -> bool:
    """True if ``target`` is ``start`` or among the nodes ``start`` was computed from in the graph."""
    stack, seen = [start], set()
    while stack:
        node = stack.pop()
        if node is target:
            return True
        if id(node) not in seen:
            seen.add(id(node))
            stack.extend(node.inputs)
    return False


def _directional_check(what: str, loss: Callable[..., float], arrays: Sequence[np.ndarray],
                       grads: Sequence[np.ndarray], rng: np.random.Generator, h: float = 1e-5,
                       tol: float = 1e-6, directions: int = 3) -> None:
    """<grads[i], V> against (loss(x_i + hV) - loss(x_i - hV)) / 2h for random directions V.
    arrays[i] and grads[i]: float64 arrays of one shape."""
    for i, (a, g) in enumerate(zip(arrays, grads)):
        for _ in range(directions):
            v = rng.standard_normal(a.shape)
            plus = [x + h * v if j == i else x for j, x in enumerate(arrays)]
            minus = [x - h * v if j == i else x for j, x in enumerate(arrays)]
            numeric = (loss(*plus) - loss(*minus)) / (2 * h)
            analytic = float(np.sum(g * v))
            if abs(numeric - analytic) > tol * max(1.0, abs(numeric), abs(analytic)):
                raise AssertionError(
                    f"{what}: the gradient of input {i} (shape {a.shape}) disagrees with finite differences "
                    f"along a random direction: <your gradient, V> = {analytic:.8g}, finite differences "
                    f"give {numeric:.8g}")


def check_gradient(name: str, fn: Callable[..., Tensor], np_fn: Callable[..., np.ndarray], arrays,
                   needs: dict[int, list[int]] | None = None, seed: int = 0) -> tuple:
    """Check the ``gradient`` of the ONE op that ``fn`` builds; returns the gradients (Tensors).

    fn(*Tensors) -> Tensor builds the op from float64 Tensors of ``arrays``; np_fn(*ndarrays) is
    the same computation in NumPy. A random ``out_grad`` (a Tensor that requires a gradient) is
    passed to ``node.op.gradient`` directly. For each input i the gradient must be a Tensor of
    input i's shape, computed by ops from ``out_grad`` (not from raw arrays), and agree with
    finite differences. needs: {gradient index: [input indices it must be computed from]}, the
    inputs its derivative depends on (so that a gradient of this gradient comes out right).
    A stub's NotImplementedError passes through; any other error becomes an AssertionError
    that names the op and the input shapes.
    """
    r = np.random.default_rng(seed)
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    inputs = [Tensor(a, dtype="float64") for a in arrays]
    node = fn(*inputs)
    g_out = r.standard_normal(node.shape)
    out_grad = Tensor(g_out, dtype="float64")          # requires_grad: gradients must grow a graph from it
    what = f"{name} (inputs {', '.join(str(a.shape) for a in arrays)})"
    try:
        grads = node.op.gradient_as_tuple(out_grad, node)
    except NotImplementedError:
        raise
    except Exception as err:
        raise AssertionError(f"{what}: gradient raised {type(err).__name__}: {err}") from err
    if len(grads) != len(inputs):
        raise AssertionError(f"{what}: gradient must return one value per input of the op (it has "
                             f"{len(inputs)}); it returned {len(grads)}")
    for i, (g, a) in enumerate(zip(grads, arrays)):
        if g is None:
            raise AssertionError(f"{what}: gradient {i} is None. Did the function forget to `return`?")
        if not isinstance(g, Tensor):
            raise AssertionError(f"{what}: gradient {i} is a {type(g).__name__}; gradient must return Tensors "
                                 f"built with ops")
        if g.shape != a.shape:
            raise AssertionError(f"{what}: gradient {i} has shape {g.shape}, but input {i} has shape {a.shape}: "
                                 f"an adjoint always has the shape of its input")
        if not reaches(g, out_grad):
            raise AssertionError(f"{what}: gradient {i} is not computed from out_grad in the graph. It was made "
                                 f"from raw data (.numpy(), .cached_data, Tensor(<array>), ...): build it with "
                                 f"ops on Tensors")
        for j in (needs or {}).get(i, []):
            if not reaches(g, inputs[j]):
                raise AssertionError(f"{what}: gradient {i} does not depend on input {j} in the graph, although "
                                     f"its derivative with respect to input {j} is not zero: it was computed "
                                     f"from raw data, so a gradient of this gradient would come out wrong")

    def loss(*xs):
        return float(np.sum(np_fn(*xs) * g_out))
    _directional_check(what, loss, arrays, [g.numpy() for g in grads], r)
    return grads


def backward_check(f: Callable[..., Tensor], *arrays, seed: int = 0) -> list[np.ndarray]:
    """Check the gradients that ``.backward()`` leaves in each input's ``.grad``; returns them.

    f(*Tensors) -> Tensor builds any graph from float64 Tensors of ``arrays``; it is evaluated
    again on the perturbed arrays for the finite differences. An input whose ``.grad`` stays
    None counts as a zero gradient.
    """
    r = np.random.default_rng(seed)
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    inputs = [Tensor(a, dtype="float64") for a in arrays]
    out = f(*inputs)
    g_out = r.standard_normal(out.shape)
    out.backward(Tensor(g_out, dtype="float64", requires_grad=False))
    grads = [np.zeros_like(a) if t.grad is None else t.grad.numpy() for t, a in zip(inputs, arrays)]

    def loss(*xs):
        return float(np.sum(f(*[Tensor(x, dtype="float64", requires_grad=False) for x in xs]).numpy() * g_out))
    _directional_check("backward", loss, arrays, grads, r)
    return grads
