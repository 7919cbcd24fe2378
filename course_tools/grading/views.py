"""Non-compact inputs: the same values handed to the student's code as strided views.

Inside the library and in later notebooks, ops receive views: transposes, slices with steps,
broadcasts and flips, none of them row-major. Code that forgets ``.compact()`` where it needs a
row-major array is right on the fresh arrays a test makes and wrong on those. So every
forward, gradient and call request also runs once on views of its inputs, in one of these
layouts (in turn, so each task meets all of them), and the check passes only if both runs agree.

    transposed   the data stored with the axes reversed; strides reversed accordingly
    strided      every other element of a larger buffer, starting at an offset
    reversed     the data stored back to front; negative strides and an offset
    broadcast    stride 0 along an axis whose values are all equal (only where that is true)
"""
from __future__ import annotations

import math

import numpy as np

from .sandbox.worker.protocol import StridedView

LAYOUTS = ("transposed", "strided", "reversed")
DESCRIPTIONS = {
    "transposed": "a transposed view (its axes stored in reverse order)",
    "strided": "a strided view with an offset (every other element of a larger buffer)",
    "reversed": "a reversed view (negative strides)",
    "broadcast": "a broadcast view (stride 0 along an axis)",
}
# The most elements the grader reads from one view (or takes from one call's arguments): a view's
# claimed geometry is checked against it before anything is allocated. The checks use a few thousand.
GRADER_READ_ELEMENTS = 2 ** 24
# Two computations on the same values but different memory orders may round differently
# (summation order, BLAS blocking); a missing .compact() changes values by O(1).
TOLERANCE = {"float16": 1e-2, "float32": 1e-5, "float64": 1e-10}


def compact_strides(shape) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def as_view(a: np.ndarray, layout: str) -> StridedView:
    """A StridedView whose values are exactly ``a``'s."""
    shape = a.shape
    if layout == "transposed":
        storage = np.ascontiguousarray(a.transpose(tuple(reversed(range(a.ndim)))))
        return StridedView(storage.reshape(-1), shape, tuple(reversed(compact_strides(storage.shape))), 0)
    if layout == "strided":
        big_shape = tuple(2 * n + 1 for n in shape)
        big = np.zeros(big_shape, dtype=a.dtype)
        big[tuple(slice(1, 2 * n, 2) for n in shape)] = a
        strides = compact_strides(big_shape)
        return StridedView(big.reshape(-1), shape, tuple(2 * s for s in strides), sum(strides))
    if layout == "reversed":
        storage = np.ascontiguousarray(a[tuple(slice(None, None, -1) for _ in shape)])
        strides = compact_strides(shape)
        return StridedView(storage.reshape(-1), shape, tuple(-s for s in strides),
                           sum((n - 1) * s for n, s in zip(shape, strides)))
    if layout == "broadcast":
        axis = _constant_axis(a)
        base = np.ascontiguousarray(a.take([0], axis=axis))
        strides = list(compact_strides(base.shape))
        strides[axis] = 0
        return StridedView(base.reshape(-1), shape, tuple(strides), 0)
    raise ValueError(f"unknown layout {layout!r}")


def _constant_axis(a: np.ndarray):
    for axis, n in enumerate(a.shape):
        if n > 1 and np.array_equal(a, np.broadcast_to(a.take([0], axis=axis), a.shape)):
            return axis
    return None


def values_of(view: StridedView) -> np.ndarray:
    """The values a StridedView stands for (the grader's own reading of a view)."""
    buffer = view.buffer.reshape(-1)
    if len(view.shape) != len(view.strides) or any(n < 0 for n in view.shape):
        raise ValueError(f"a view with shape {tuple(view.shape)} and strides {tuple(view.strides)} is not a view "
                         f"(one stride per axis, no negative sizes)")
    elements = math.prod(view.shape)
    if elements > GRADER_READ_ELEMENTS:
        raise ValueError(f"a view claiming shape {tuple(view.shape)} = {elements:.3g} elements is larger than the "
                         f"{GRADER_READ_ELEMENTS} (2**{GRADER_READ_ELEMENTS.bit_length() - 1}) elements the grader reads")
    if elements == 0:
        return np.empty(view.shape, dtype=buffer.dtype)
    low = view.offset + sum(min(0, (n - 1) * s) for n, s in zip(view.shape, view.strides))
    high = view.offset + sum(max(0, (n - 1) * s) for n, s in zip(view.shape, view.strides))
    if low < 0 or high >= buffer.size:
        raise ValueError(f"a view with shape {tuple(view.shape)}, strides {tuple(view.strides)} and offset "
                         f"{view.offset} reaches elements {low}..{high} of a buffer of {buffer.size}")
    index = np.full(view.shape, view.offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(view.shape, view.strides)):
        shape = [1] * len(view.shape)
        shape[axis] = n
        index = index + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return buffer[index]


class Rotation:
    """Hands out the layouts in turn, so the calls of one task meet every layout."""

    def __init__(self):
        self.count = 0

    def views(self, args):
        """``args`` with each array of two or more elements replaced by a view (None if none was);
        the layouts used, for the message when the results differ."""
        used = []

        def replace(value):
            if type(value) is np.ndarray and value.size >= 2 and value.ndim >= 1:
                layout = "broadcast" if _constant_axis(value) is not None else LAYOUTS[self.count % len(LAYOUTS)]
                if layout == "transposed" and value.ndim < 2:
                    layout = "strided"
                self.count += 1
                used.append(layout)
                return as_view(value, layout)
            if isinstance(value, list):
                return [replace(v) for v in value]
            if isinstance(value, tuple):
                return tuple(replace(v) for v in value)
            if isinstance(value, dict):
                return {k: replace(v) for k, v in value.items()}
            return value

        replaced = replace(list(args))
        return (replaced, used) if used else (None, [])


def difference(compact, viewed, where: str = "the result") -> str | None:
    """Why two results differ (structure, shape, dtype or values), or None when they agree."""
    if isinstance(compact, np.ndarray) or isinstance(viewed, np.ndarray):
        if not (isinstance(compact, np.ndarray) and isinstance(viewed, np.ndarray)):
            return f"{where} is a {type(viewed).__name__} instead of an array"
        if compact.shape != viewed.shape:
            return f"{where} has shape {viewed.shape} instead of {compact.shape}"
        if compact.dtype != viewed.dtype:
            return f"{where} has dtype {viewed.dtype} instead of {compact.dtype}"
        if compact.dtype.kind in "biu":
            same = np.array_equal(compact, viewed)
        else:
            tol = TOLERANCE.get(compact.dtype.name, 1e-10)
            same = np.allclose(viewed, compact, rtol=tol, atol=tol, equal_nan=True)
        if not same:
            with np.errstate(invalid="ignore"):
                err = np.abs(viewed.astype(np.float64) - compact.astype(np.float64))
            return f"{where} has different values (largest difference {np.nanmax(err):.3g})"
        return None
    if isinstance(compact, (list, tuple)) and isinstance(viewed, (list, tuple)):
        if len(compact) != len(viewed):
            return f"{where} has {len(viewed)} entries instead of {len(compact)}"
        for i, (c, v) in enumerate(zip(compact, viewed)):
            found = difference(c, v, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(compact, dict) and isinstance(viewed, dict):
        if set(compact) != set(viewed):
            return f"{where} has keys {sorted(viewed)} instead of {sorted(compact)}"
        for key in compact:
            found = difference(compact[key], viewed[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(compact, float) and isinstance(viewed, float):
        if (math.isnan(compact) and math.isnan(viewed)) or math.isclose(compact, viewed, rel_tol=1e-9):
            return None
    if compact != viewed:
        return f"{where} is {viewed!r} instead of {compact!r}"
    return None


def view_of(base: np.ndarray, view: np.ndarray) -> StridedView:
    """``view`` (a NumPy view of the compact array ``base``: a transpose, slice, broadcast...) as a
    StridedView over base's buffer, with the same strides and offset in elements."""
    itemsize = base.itemsize
    offset = (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // itemsize
    return StridedView(np.ascontiguousarray(base).reshape(-1), view.shape,
                       tuple(s // itemsize for s in view.strides), offset)
