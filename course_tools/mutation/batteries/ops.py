"""Batteries of 01_forward_ops and 02_backward_ops: ops' gradients, reduce_to_shape, transpose_permutation.

A gradient is observed with its values and shapes, and with the gradient of the sum of its parts
(back through the adjoints' own graph, as the hidden suite's gradients of gradients do).
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..observe import observe
from .battery import Battery
from .inputs import shapes, values


def _gradient_and_second_order(ns, make, arrays, out_grad):
    """op node = make(*tensors); (its adjoints, d(sum of the adjoints' entries)/d(inputs, out_grad))."""
    Tensor, ops = ns["Tensor"], ns["ops"]
    tensors = [Tensor(a, dtype=str(a.dtype)) for a in arrays]
    node = make(*tensors)
    upstream = Tensor(out_grad, dtype=str(out_grad.dtype))
    grads = node.op.gradient(upstream, node)
    grads = grads if isinstance(grads, tuple) else (grads,)
    total = None
    for g in grads:
        part = ops.summation(g)
        total = part if total is None else total + part
    if total is not None and total.requires_grad:
        total.backward()
    seconds = tuple(t.grad for t in (*tensors, upstream))
    return grads, seconds


def _op_battery(make, arrays, cells=("helpers",)):
    """The gradient of ``make(ns, case)`` (an op of the case's tensors) on the case's arrays."""
    def run(ns, case):
        arrays, out_grad = case["arrays"], case["out_grad"]
        copies = [a.copy() for a in arrays]
        return observe(lambda: _gradient_and_second_order(ns, lambda *t: make(ns, case, *t), copies,
                                                         out_grad.copy()), copies)
    return Battery(run, cases=arrays)


def _one_input(extra=st.just({}), out_shape=lambda case: case["shape"], finite=False, min_dims=0):
    """Cases {"arrays": [a], "out_grad": ..., **extra} for one-input elementwise or shaping ops."""
    @st.composite
    def case(draw):
        dtype = draw(st.sampled_from((np.float32, np.float64)))
        shape = draw(shapes(min_dims=min_dims))
        c = {"shape": shape, **draw(extra if not callable(extra) or isinstance(extra, st.SearchStrategy)
                                    else extra(shape))}
        a = draw(values(dtype, shape, finite))
        c["arrays"] = [a]
        c["out_grad"] = draw(values(dtype, out_shape(c), finite))
        return c
    return case()


def _summed_shape(case):
    shape, axes = case["shape"], case["axes"]
    if axes is None:
        return ()
    axes = {a % len(shape) for a in ((axes,) if isinstance(axes, int) else axes)}
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _axes(shape):
    if not shape:
        return st.just({"axes": None})
    n = len(shape)
    axis = st.integers(-n, n - 1)
    return st.fixed_dictionaries({"axes": st.one_of(st.none(), axis, st.lists(axis, min_size=1, max_size=n).filter(
        lambda xs: len({x % n for x in xs}) == len(xs)).map(tuple))})


def _reshape_target(shape):
    size = int(np.prod(shape))
    return st.fixed_dictionaries({"target": st.sampled_from([(size,), (1, size), (-1,), (size, 1)] +
                                                            ([tuple(reversed(shape))] if shape else [()]))})


def _reshape_out(case):
    size = int(np.prod(case["shape"]))
    return tuple(size if n == -1 else n for n in case["target"])


# ---------------------------------------------------------------- reduce_to_shape (backward_broadcast_to)
@st.composite
def _broadcast_case(draw):
    dtype = draw(st.sampled_from((np.float32, np.float64)))
    shape = draw(shapes(min_dims=0, max_dims=3, max_side=3))
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    target = tuple(lead) + tuple(draw(st.integers(0, 3)) if n == 1 else n for n in shape)
    as_list = draw(st.booleans())
    return {"grad": draw(values(dtype, target)), "shape": list(shape) if as_list else shape}


def _reduce_to_shape(ns, case):
    grad = ns["Tensor"](case["grad"].copy(), dtype=str(case["grad"].dtype))
    shape = list(case["shape"]) if isinstance(case["shape"], list) else case["shape"]
    return observe(lambda: ns["reduce_to_shape"](grad, shape), (grad, shape))


# ---------------------------------------------------------------- transpose_permutation
def _transpose_permutation(ns, case):
    axes, ndim = case

    def call():
        try:
            return ns["transpose_permutation"](axes, ndim)
        except ValueError as err:
            # the contract: a ValueError naming axes and ndim
            return ("ValueError", repr(axes) in str(err), str(ndim) in str(err))
    return observe(call)


_axis = st.integers(-5, 5)
BATTERIES = {
    "backward_power_scalar": _op_battery(lambda ns, c, a: ns["ops"].power_scalar(a, c["scalar"]), _one_input(
        st.fixed_dictionaries({"scalar": st.sampled_from([2, 3, 1, 0, -1, -2, 0.5, 2.5])}))),
    "backward_log": _op_battery(lambda ns, c, a: ns["ops"].log(a), _one_input()),
    "backward_relu": _op_battery(lambda ns, c, a: ns["ops"].relu(a), _one_input()),
    "backward_reshape": _op_battery(lambda ns, c, a: ns["ops"].reshape(a, c["target"]),
                                    _one_input(_reshape_target, out_shape=_reshape_out)),
    "backward_summation": _op_battery(lambda ns, c, a: ns["ops"].summation(a, c["axes"]),
                                      _one_input(_axes, out_shape=_summed_shape)),
    "backward_broadcast_to": Battery(_reduce_to_shape, cases=_broadcast_case(),
                                     fixed=tuple({"grad": np.zeros(t), "shape": s} for s, t in [
                                         ((3, 1), (3, 0)), ((1,), (0,)), ((2, 1, 4), (5, 2, 3, 4)), ((), (2, 2)),
                                         ([3, 1], (3, 4)), ((3, 4), (3, 4))])),
    "transpose_permutation": Battery(_transpose_permutation, cases=st.tuples(
        st.one_of(st.none(), st.tuples(_axis, _axis), st.tuples(_axis), st.tuples(_axis, _axis, _axis)),
        st.integers(0, 4)), fixed=tuple((axes, n) for n in range(4) for axes in (None, (0, 1), (-1, -2), (0, 0)))),
}
