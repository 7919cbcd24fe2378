"""Battery of 05_pooling_backward: Col2Im, the adjoint of the pooling windows.

Geometries with overlapping windows (stride < kernel), gaps (stride > kernel: rows and columns no
window reads), padding up to half the kernel, batch and channel counts that differ from each other
and from the kernel; columns in every dtype and layout, with the specials.
"""
from __future__ import annotations

from hypothesis import strategies as st

from ..observe import observe
from .battery import Battery
from .inputs import dtypes, layouts, ndarray, values


@st.composite
def _col2im_case(draw):
    k = draw(st.integers(1, 3))
    s, p = draw(st.integers(1, 4)), draw(st.integers(0, k // 2))
    n, c = draw(st.integers(0, 3)), draw(st.integers(1, 3))
    h, w = draw(st.integers(max(1, k - 2 * p), 7)), draw(st.integers(max(1, k - 2 * p), 7))
    h_out, w_out = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    columns = draw(values(draw(dtypes), (n, h_out, w_out, k * k, c)))
    return {"in_shape": (n, h, w, c), "k": k, "s": s, "p": p, "columns": columns, "layout": draw(layouts)}


def _col2im(ns, case):
    columns = ndarray(case["columns"], case["layout"])
    op = ns["Col2Im"](case["in_shape"], case["k"], case["s"], case["p"])
    return observe(lambda: op.compute(columns), (columns,))


BATTERIES = {"pool_col2im": Battery(_col2im, cases=_col2im_case())}
