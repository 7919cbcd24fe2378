# Generated from course_lib/ops/flip_dilate.py for the release of 02_backward_ops by `python -m course_tools.build` - do not edit.
"""Flip, dilate and their adjoints, plus pad and crop: the index-moving ops that convolution's
backward pass is built from (assignment 03).

Dilation ``d`` inserts ``d`` zeros *after* every element along each dilated axis, so a 2x2
array dilated by 1 on both axes becomes 4x4:

    [[1, 2],        [[1, 0, 2, 0],
     [3, 4]]   ->    [0, 0, 0, 0],
                     [3, 0, 4, 0],
                     [0, 0, 0, 0]]
"""
from __future__ import annotations

from .. import nd
from ..autograd import Tensor, TensorOp
from ..nd import NDArray, _normalize_axes


class Flip(TensorOp):
    """Reverse the order of elements along ``axes`` (an int or a tuple, normalised in compute)."""

    def __init__(self, axes):
        self.axes = axes

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("op_flip: not implemented yet; you write it in assignment 03_ndarray")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("op_flip: not implemented yet; you write it in assignment 03_ndarray")


def flip(a: Tensor, axes) -> Tensor:
    return Flip(axes)(a)


def _check_dilation(dilation: int):
    if int(dilation) != dilation or dilation < 0:
        raise ValueError(f"dilation must be a non-negative integer, got {dilation!r}")


class Dilate(TensorOp):
    """Insert ``dilation`` zeros after every element along ``axes``: size n -> n * (dilation + 1)."""

    def __init__(self, axes, dilation: int):
        _check_dilation(dilation)
        self.axes = axes
        self.dilation = int(dilation)

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("op_dilate: not implemented yet; you write it in assignment 03_ndarray")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("op_dilate: not implemented yet; you write it in assignment 03_ndarray")


def dilate(a: Tensor, axes, dilation: int) -> Tensor:
    return Dilate(axes, dilation)(a)


class UnDilate(TensorOp):
    """Keep every (dilation + 1)-th element along ``axes``, starting with the first: the
    inverse of Dilate, and its adjoint."""

    def __init__(self, axes, dilation: int):
        _check_dilation(dilation)
        self.axes = axes
        self.dilation = int(dilation)

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("op_undilate: not implemented yet; you write it in assignment 03_ndarray")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("op_undilate: not implemented yet; you write it in assignment 03_ndarray")


def undilate(a: Tensor, axes, dilation: int) -> Tensor:
    return UnDilate(axes, dilation)(a)


class Pad(TensorOp):
    """Zero padding: ``widths`` is ((before, after), ...) with one pair per axis."""

    def __init__(self, widths):
        self.widths = tuple(tuple(int(w) for w in pair) for pair in widths)

    def compute(self, a: NDArray) -> NDArray:
        return a.pad(self.widths)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return crop(out_grad, self.widths)


def pad(a: Tensor, widths) -> Tensor:
    return Pad(widths)(a)


class Crop(TensorOp):
    """Remove ((before, after), ...) elements from each axis: the adjoint of Pad."""

    def __init__(self, widths):
        self.widths = tuple(tuple(int(w) for w in pair) for pair in widths)

    def compute(self, a: NDArray) -> NDArray:
        if len(self.widths) != a.ndim or any(b < 0 or e < 0 or b + e > n
                                             for (b, e), n in zip(self.widths, a.shape)):
            raise ValueError(f"cannot crop {self.widths} from an array of shape {a.shape}")
        return a[tuple(slice(b, n - e) for (b, e), n in zip(self.widths, a.shape))].compact()

    def gradient(self, out_grad: Tensor, node: Tensor):
        return pad(out_grad, self.widths)


def crop(a: Tensor, widths) -> Tensor:
    return Crop(widths)(a)
