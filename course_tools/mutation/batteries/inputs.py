"""Hypothesis strategies shared by the batteries: the edge inputs of array code.

    dtypes                 float16, float32, float64
    shapes(1, 3)           shapes of 1..3 axes, each of size 0..4
    values(dtype, shape)   arrays with exact zeros, -0.0, NaN, +-inf, ties (few distinct values)
    layouts                "compact" and the grader's non-compact views (grading/views.py)
    ndarray(a, layout)     a course_lib NDArray holding ``a``'s values in that layout
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOAT_DTYPES = (np.float16, np.float32, np.float64)
dtypes = st.sampled_from(FLOAT_DTYPES)
layouts = st.sampled_from(("compact", "transposed", "strided", "reversed", "broadcast"))


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0, max_side: int = 4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def _elements(dtype, finite: bool):
    width = np.dtype(dtype).itemsize * 8
    special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5])
    if finite:
        return st.one_of(special, st.floats(-4, 4, width=width))
    return st.one_of(special, st.sampled_from([np.nan, np.inf, -np.inf]),
                     st.floats(width=width, allow_subnormal=False))


def values(dtype, shape, finite: bool = False):
    """Arrays of ``dtype`` and ``shape``: often few distinct values (ties), with the specials unless ``finite``."""
    return hnp.arrays(dtype, shape, elements=_elements(dtype, finite), fill=st.nothing())


def positive(dtype, shape):
    return hnp.arrays(dtype, shape, elements=st.floats(0.25, 4, width=np.dtype(dtype).itemsize * 8))


def ndarray(a: np.ndarray, layout: str = "compact"):
    """A course_lib NDArray (CPU) with ``a``'s values, stored in ``layout`` (a fresh buffer every call)."""
    from course_lib import nd
    from course_lib.backend import cpu
    from course_tools.grading.views import _constant_axis, as_view

    a = np.array(a, copy=True)
    if layout == "compact" or a.size < 2 or a.ndim == 0 or (layout == "transposed" and a.ndim < 2) or \
            (layout == "broadcast" and _constant_axis(a) is None):
        return nd.array(a, dtype=str(a.dtype))
    view = as_view(a, layout)
    return nd.NDArray.make(view.shape, strides=view.strides, handle=np.array(view.buffer, copy=True),
                           offset=view.offset, device=cpu())
