"""Misconceptions of 01_forward_ops, each a wrong ``compute`` written here in NumPy from its idea.

(broadcast_to with the new axes appended on the right is in the catalogue but not here: on every
shape the hidden checks use it either raises, which the feedback already shows, or is right.)"""
from __future__ import annotations

import numpy as np

from course_tools.grading.api import (Call, Misconception, Probe, forward_call, forward_of, in_dtype,
                                      notebook_place)

NOTEBOOK = "01_forward_ops"


def _where(title: str) -> str:
    return notebook_place("Part 2", NOTEBOOK, title)


def transpose_reverses_all_axes(call: Call):
    found = forward_of(call, "Transpose")
    if found is None or found[0].get("axes") is not None:
        return None  # with explicit axes the mistake has no single form
    (a,) = found[1]
    return np.transpose(a)  # NumPy's .T: every axis reversed


def summation_keeps_dims(call: Call):
    found = forward_of(call, "Summation")
    if found is None:
        return None
    axes = found[0].get("axes")
    (a,) = found[1]
    return np.sum(a, axis=tuple(axes) if isinstance(axes, (tuple, list)) else axes, keepdims=True)


def relu_returns_the_mask(call: Call):
    found = forward_of(call, "ReLU")
    if found is None:
        return None
    (a,) = found[1]
    return in_dtype(a > 0, a)


def matmul_transposed_product(call: Call):
    found = forward_of(call, "MatMul")
    if found is None:
        return None
    a, b = found[1]
    # b^T a^T = (a b)^T: every matrix of the batch comes out transposed.
    return np.swapaxes(np.matmul(a, b), -1, -2)


MISCONCEPTIONS = [
    Misconception(
        "forward_transpose", "transpose_reverses_all_axes", "the default transpose reverses every axis",
        "With no axes given, your transpose reverses the order of all the axes, the way NumPy's x.T and "
        "np.transpose(x) do. For a matrix that is the same as swapping the last two axes, so 2-D tests pass; for a "
        "batch of shape (2, 3, 4) it gives (4, 3, 2) instead of (2, 4, 3), mixing the batch axis into the matrices. "
        "The default swaps only the last two axes; self._permutation(a.ndim), your transpose_permutation, builds that "
        "order.",
        _where("transpose: swap two axes (by default the last two)"), transpose_reverses_all_axes),
    Misconception(
        "forward_summation", "summation_keeps_dims", "the summed axes are kept with size 1",
        "Your summation adds up the right numbers but keeps every summed axis with size 1 (NumPy's keepdims=True): "
        "summing (3, 4, 5) over axis 1 gives (3, 1, 5) instead of (3, 5), and summing everything gives (1, 1, 1) "
        "instead of the 0-d shape (). In course_lib the summed axes disappear from the shape.",
        _where("summation: sum over some axes, removing them"), summation_keeps_dims),
    Misconception(
        "forward_relu", "relu_returns_the_mask", "relu returns the 0/1 mask instead of the values",
        "Your relu returns 1 where a > 0 and 0 elsewhere: that is the mask (and the derivative of relu), not "
        "relu itself. relu keeps the positive values as they are, max(a, 0), e.g. with a.maximum(0).",
        notebook_place("Part 1", NOTEBOOK, "relu: max(a, 0)"), relu_returns_the_mask),
    Misconception(
        "forward_matmul", "matmul_transposed_product", "matmul returns the transposed product",
        "Your matmul returns (a b)^T = b^T a^T: every product comes out transposed, (n, k) @ (k, m) gives "
        "(m, n) instead of (n, m) (and square matrices get the right shape with the wrong entries). The "
        "product a @ b needs no transposes at all: NDArray's @ already multiplies over the last two axes and "
        "broadcasts the batch axes.",
        _where("matmul: matrix products, batch axes broadcast"), matmul_transposed_product),
]


# Inputs on which these mistakes show, for `course check` (probes.py).
_r = np.random.default_rng(101)
PROBES = [
    Probe("forward_transpose", forward_call("Transpose", {"axes": None}, _r.standard_normal((2, 3, 4))), 0, 0),
    Probe("forward_transpose", forward_call("Transpose", {"axes": None}, _r.standard_normal((3, 2, 2, 5))), 0, 0),
    Probe("forward_summation", forward_call("Summation", {"axes": (1,)}, _r.standard_normal((3, 4, 5))), 1e-10, 1e-12),
    Probe("forward_summation", forward_call("Summation", {"axes": None}, _r.standard_normal((2, 3))), 1e-10, 1e-12),
    Probe("forward_relu", forward_call("ReLU", {}, _r.standard_normal((4, 5))), 0, 0),
    Probe("forward_relu", forward_call("ReLU", {}, _r.standard_normal((2, 3, 2))), 0, 0),
    Probe("forward_matmul", forward_call("MatMul", {}, _r.standard_normal((2, 3)), _r.standard_normal((3, 4))),
          1e-10, 1e-12),
    Probe("forward_matmul", forward_call("MatMul", {}, _r.standard_normal((2, 3, 4)), _r.standard_normal((4, 2))),
          1e-10, 1e-12),
]
