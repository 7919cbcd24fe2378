# Generated from course_lib/ops/shaping.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""Ops that move, replicate or reduce elements: reshape, broadcast_to, summation, transpose,
matmul, logsumexp, stack and split.

Assignment 01 writes their ``compute``; assignment 02 their ``gradient``.
"""
from __future__ import annotations

from typing import Optional

from .. import nd
from ..autograd import Tensor, TensorOp, TensorTuple, TensorTupleOp, make_tuple
from ..nd import NDArray, _normalize_axes, batch_shape
from .elementwise import exp


class Reshape(TensorOp):
    def __init__(self, shape):
        self.shape = tuple(shape)

    def compute(self, a: NDArray) -> NDArray:
        return a.compact().reshape(self.shape)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return reshape(out_grad, node.inputs[0].shape)


def reshape(a: Tensor, shape) -> Tensor:
    return Reshape(shape)(a)


def reduce_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Sum ``grad`` down to ``shape``: the adjoint of broadcasting ``shape`` to ``grad.shape``.

    Axes that broadcasting *prepended* are summed away; axes where ``shape`` has 1 are summed
    and kept with size 1. grad: (*lead, *S') -> (*S).
    """
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = len(grad.shape) - len(shape)
    summed = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1)
    return reshape(summation(grad, summed), shape)


class BroadcastTo(TensorOp):
    """Repeat axes of size 1 and prepend new axes: (3, 1) -> (2, 3, 4)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def compute(self, a: NDArray) -> NDArray:
        return a.broadcast_to(self.shape).compact()

    def gradient(self, out_grad: Tensor, node: Tensor):
        return reduce_to_shape(out_grad, node.inputs[0].shape)


def broadcast_to(a: Tensor, shape) -> Tensor:
    return BroadcastTo(shape)(a)


class Summation(TensorOp):
    """Sum over ``axes`` (None: all; an int; or a tuple), removing them: (2, 3, 4) over (0, 2) -> (3,)."""

    def __init__(self, axes: Optional[tuple] = None):
        self.axes = axes

    def compute(self, a: NDArray) -> NDArray:
        return a.sum(axis=_normalize_axes(self.axes, a.ndim))

    def gradient(self, out_grad: Tensor, node: Tensor):
        in_shape = node.inputs[0].shape
        axes = _normalize_axes(self.axes, len(in_shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(in_shape))
        return broadcast_to(reshape(out_grad, kept), in_shape)


def summation(a: Tensor, axes=None) -> Tensor:
    return Summation(axes)(a)


def transpose_permutation(axes, ndim: int) -> tuple[int, ...]:
    """The order of axes that ``Transpose(axes)`` hands to ``NDArray.permute`` for an input with
    ``ndim`` axes: permuted by it, the input has its two axes swapped and every other axis in place.
    ``axes``: None (the last two) or a pair ``(i, j)`` of distinct axes, negatives counting from the
    end. ``transpose_permutation(None, 3) == (0, 2, 1)``. ValueError naming ``axes`` and ``ndim``
    when ``ndim < 2``, an axis is out of range, or ``axes`` is not two distinct axes.

    Assignment 01's task; ``Transpose._permutation`` looks it up when called, so that a notebook's
    ``implements(ops.shaping, "transpose_permutation")`` and a grader's lent reference reach it.
    """
    if ndim < 2:
        raise ValueError(f"transpose needs an array with at least 2 dimensions, got one with {ndim} "
                         f"(axes={axes!r})")
    try:
        swapped = _normalize_axes((-2, -1) if axes is None else axes, ndim)
    except ValueError as err:
        raise ValueError(f"transpose of an array with {ndim} dimensions, axes={axes!r}: {err}") from None
    if len(swapped) != 2:
        raise ValueError(f"transpose swaps two distinct axes, got axes={axes!r} for an array with {ndim} "
                         f"dimensions")
    i, j = swapped
    order = list(range(ndim))
    order[i], order[j] = order[j], order[i]
    return tuple(order)


class Transpose(TensorOp):
    """Swap two axes: the last two by default. (2, 3, 4) -> (2, 4, 3); axes=(0, 2) -> (4, 3, 2)."""

    def __init__(self, axes: Optional[tuple] = None):
        self.axes = axes

    def _permutation(self, ndim: int) -> tuple[int, ...]:
        """The full order of axes for ``NDArray.permute``: ``transpose_permutation(self.axes, ndim)``."""
        return transpose_permutation(self.axes, ndim)

    def compute(self, a: NDArray) -> NDArray:
        return a.permute(self._permutation(a.ndim))

    def gradient(self, out_grad: Tensor, node: Tensor):
        # Swapping the same two axes again undoes the swap.
        return transpose(out_grad, self.axes)


def transpose(a: Tensor, axes=None) -> Tensor:
    return Transpose(axes)(a)


class MatMul(TensorOp):
    """(..., n, k) @ (..., k, m) -> (..., n, m); batch axes broadcast like NumPy's matmul."""

    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        return a @ b

    def gradient(self, out_grad: Tensor, node: Tensor):
        a, b = node.inputs
        grad_a = matmul(out_grad, transpose(b))
        grad_b = matmul(transpose(a), out_grad)
        # A batch axis that was broadcast received one partial per repetition: sum them.
        return reduce_to_shape(grad_a, a.shape), reduce_to_shape(grad_b, b.shape)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    if len(a.shape) < 2 or len(b.shape) < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align "
                         f"(need (..., n, k) @ (..., k, m))")
    batch_shape(a.shape[:-2], b.shape[:-2], f"matmul of {a.shape} and {b.shape}")
    return MatMul()(a, b)


class LogSumExp(TensorOp):
    """log(sum(exp(a), axes)), computed as max + log(sum(exp(a - max))) so it never overflows."""

    def __init__(self, axes: Optional[tuple] = None):
        self.axes = axes

    def compute(self, a: NDArray) -> NDArray:
        axes = _normalize_axes(self.axes, a.ndim)
        # An infinite maximum would make a - peak = inf - inf = NaN; shifting by 0 instead
        # lets exp/log produce the right +-inf.
        peak = a.max(axis=axes, keepdims=True).replace_nonfinite(0.0)
        shifted = (a - peak.broadcast_to(a.shape)).exp().sum(axis=axes, keepdims=True)
        out = shifted.log() + peak
        return out.reshape(tuple(n for i, n in enumerate(a.shape) if i not in axes))

    def gradient(self, out_grad: Tensor, node: Tensor):
        a = node.inputs[0]
        axes = _normalize_axes(self.axes, len(a.shape))
        kept = tuple(1 if i in axes else n for i, n in enumerate(a.shape))
        softmax = exp(a - broadcast_to(reshape(node, kept), a.shape))
        return broadcast_to(reshape(out_grad, kept), a.shape) * softmax


def logsumexp(a: Tensor, axes=None) -> Tensor:
    return LogSumExp(axes)(a)


class Stack(TensorOp):
    """Join n tensors of one shape along a new axis: n x (3, 4) with axis=1 -> (3, n, 4)."""

    def __init__(self, axis: int):
        self.axis = axis

    def compute(self, *arrays: NDArray) -> NDArray:
        first = arrays[0]
        for other in arrays[1:]:
            if other.shape != first.shape:
                raise ValueError(f"stack: all shapes must match, got {first.shape} and {other.shape}")
        n = len(arrays)
        axis = self.axis % (first.ndim + 1)
        out_shape = first.shape[:axis] + (n,) + first.shape[axis:]
        out = nd.empty(out_shape, dtype=first.dtype, device=first.device)
        for i, array in enumerate(arrays):
            index = tuple([slice(None)] * axis + [slice(i, i + 1)])
            out[index] = array.compact().reshape(first.shape[:axis] + (1,) + first.shape[axis:])
        return out

    def gradient(self, out_grad: Tensor, node: Tensor):
        return split(out_grad, self.axis).tuple()


def stack(tensors, axis: int) -> Tensor:
    return Stack(axis)(*tensors)


class Split(TensorTupleOp):
    """The inverse of stack: (3, n, 4) split on axis 1 -> n tensors of (3, 4)."""

    def __init__(self, axis: int):
        self.axis = axis

    def compute(self, a: NDArray):
        axis = self.axis % a.ndim
        rest = a.shape[:axis] + a.shape[axis + 1:]
        parts = []
        for i in range(a.shape[axis]):
            index = tuple([slice(None)] * axis + [slice(i, i + 1)])
            parts.append(a[index].compact().reshape(rest))
        return tuple(parts)

    def gradient(self, out_grad: TensorTuple, node):
        return stack(out_grad.tuple(), self.axis)


def split(a: Tensor, axis: int) -> TensorTuple:
    return Split(axis)(a)
