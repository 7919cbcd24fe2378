"""Batteries of 03_ndarray: NDArray views (permute, broadcast_to, slicing), undilate, adjoint_check.

A view is observed as what it holds (observe.py: shape, dtype, values), plus
what the next operation on it does: its compact copy and a further slice.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from ..observe import observe
from .battery import Battery
from .inputs import dtypes, layouts, ndarray, shapes, values


def _view_and_next(view):
    """A view, its compact copy, and a slice of it taken again (offset arithmetic shows there)."""
    again = view[tuple(slice(None, None, -1) for _ in view.shape)] if view.ndim else view
    return view, view.compact(), again


@st.composite
def _array(draw, min_dims=0, max_dims=3):
    dtype = draw(dtypes)
    shape = draw(shapes(min_dims, max_dims))
    return {"a": draw(values(dtype, shape)), "layout": draw(layouts)}


@st.composite
def _permute_case(draw):
    c = draw(_array())
    n = c["a"].ndim
    order = draw(st.permutations(range(n)))
    c["axes"] = tuple(draw(st.sampled_from([i, i - n])) if n else i for i in order)
    return c


def _permute(ns, case):
    x = ndarray(case["a"], case["layout"])
    return observe(lambda: _view_and_next(x.permute(case["axes"])), (x,))


@st.composite
def _broadcast_case(draw):
    c = draw(_array())
    lead = draw(st.lists(st.integers(0, 3), max_size=2))
    c["shape"] = tuple(lead) + tuple(draw(st.integers(0, 3)) if n == 1 else
                                     draw(st.sampled_from([n, n, n + 1])) for n in c["a"].shape)
    return c


def _broadcast(ns, case):
    x = ndarray(case["a"], case["layout"])
    return observe(lambda: _view_and_next(x.broadcast_to(case["shape"])), (x,))


@st.composite
def _slice_case(draw):
    c = draw(_array(1, 3))
    bound = st.one_of(st.none(), st.integers(-6, 6))
    index = st.one_of(st.integers(-5, 5), st.builds(slice, bound, bound, st.sampled_from([None, 1, 2, 3, -1, -2])))
    c["index"] = tuple(draw(st.lists(index, min_size=1, max_size=c["a"].ndim)))
    return c


def _getitem(ns, case):
    x = ndarray(case["a"], case["layout"])
    return observe(lambda: _view_and_next(x[case["index"]]), (x,))


@st.composite
def _undilate_case(draw):
    c = draw(_array(1, 3))
    n = c["a"].ndim
    c["axes"] = tuple(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda a: a % n)))
    c["dilation"] = draw(st.integers(0, 3))
    return c


def _undilate(ns, case):
    x = ndarray(case["a"], case["layout"])
    def call():  # the notebook asks for a compact result (the hidden suite checks it)
        out = ns["UnDilate"](case["axes"], case["dilation"]).compute(x)
        return out, out.is_compact()
    return observe(call, (x,))


# ---------------------------------------------------------------- adjoint_check
_M = np.random.default_rng(26).standard_normal((3, 4))
_PAIRS = {  # name -> (forward, backward) for x of shape (4,) and y of shape (3,), or any shapes
    "transpose": (lambda x: _M @ x, lambda y: _M.T @ y),
    "twice the transpose": (lambda x: _M @ x, lambda y: 2 * _M.T @ y),
    "NaN backward": (lambda x: _M @ x, lambda y: np.full(4, np.nan)),
    "inf backward": (lambda x: _M @ x, lambda y: np.full(4, np.inf)),
    "inf forward": (lambda x: np.full(3, np.inf), lambda y: _M.T @ y),
    "NaN forward": (lambda x: np.full(3, np.nan), lambda y: _M.T @ y),
    "zero": (lambda x: np.zeros(3), lambda y: np.zeros(4)),
    "float16": (lambda x: (_M @ x).astype(np.float16), lambda y: (_M.T @ y).astype(np.float16)),
    "wrong shape": (lambda x: _M @ x, lambda y: np.zeros(5)),
    "raises": (lambda x: _M @ x, lambda y: 1 / 0),
    "a list": (lambda x: list(_M @ x), lambda y: list(_M.T @ y)),
}


def _adjoint_check(ns, case):
    name, trials, seed = case
    forward, backward = _PAIRS[name]
    calls = {"forward": 0, "backward": 0}

    def counted(fn, key):
        def call(v):
            calls[key] += 1
            return fn(v)
        return call
    seen = observe(lambda: ns["adjoint_check"](counted(forward, "forward"), counted(backward, "backward"),
                                              (4,), (3,), trials=trials, seed=seed))
    return seen + (tuple(calls.items()),)


def _empty_adjoint_check(ns, case):
    x_shape, y_shape = case
    return observe(lambda: ns["adjoint_check"](lambda x: np.zeros(y_shape), lambda y: np.zeros(x_shape),
                                               x_shape, y_shape))


def _adjoint(ns, case):
    return _adjoint_check(ns, case) if isinstance(case[0], str) else _empty_adjoint_check(ns, case)


_ADJOINT_FIXED = tuple((name, trials, 0) for name in _PAIRS for trials in (1, 3)) + (
    ((0,), (3,)), ((4,), (0,)), ((0,), (0,)), ((), ()))

BATTERIES = {
    "ndarray_permute": Battery(_permute, cases=_permute_case()),
    "ndarray_broadcast_to": Battery(_broadcast, cases=_broadcast_case()),
    "ndarray_getitem": Battery(_getitem, cases=_slice_case()),
    "op_undilate": Battery(_undilate, cases=_undilate_case()),
    "adjoint_check": Battery(_adjoint, fixed=_ADJOINT_FIXED, cases=st.tuples(
        st.sampled_from(sorted(_PAIRS)), st.integers(1, 3), st.integers(0, 5))),
}
