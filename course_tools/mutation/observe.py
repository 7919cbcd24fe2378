"""What a call did, as a plain value two implementations can be compared on.

    seen = observe(lambda: fn(*args), args)     # ("returns", value, args after) or ("raises", "ValueError", args after)
    why = differs(seen_reference, seen_mutant)  # None when they agree, else one line saying where

The value is reduced to a tree of tuples, dicts, strings, ints and ``Floats`` (a NumPy array of
floating point numbers, with its dtype and shape). NDArrays keep what a caller can see: shape,
dtype, values and whether they are compact (the offset and strides of a view are how it is
stored, not what it holds, and a view with no elements has no offset to speak of). Tensors are
their values. Arguments are observed after the call, so an implementation that changes its
caller's array in place differs from one that does not.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Floats:
    """A floating point array (or number) to compare with a tolerance of its dtype."""
    values: np.ndarray

    def __repr__(self) -> str:
        v = self.values
        if v.ndim == 0:
            return repr(v.item())
        return f"Floats({v.dtype}, shape {v.shape}: {np.array2string(v.ravel()[:6], precision=4)}...)"


@dataclass(frozen=True)
class Within:
    """A number the task promises only to ``rtol``: a measurement (bytes a run allocated), or a value
    its contract lets be computed in float32. Two agree within ``rtol`` of the larger."""
    value: float
    rtol: float


def _ndarray_like(value):
    """An NDArray of course_lib (duck-typed: the release's course_lib is another module)."""
    return hasattr(value, "is_compact") and hasattr(value, "numpy") and hasattr(value, "strides")


def reduce(value, depth: int = 0):
    """``value`` as a comparable tree (see the module docstring)."""
    if depth > 8:
        return ("deep", type(value).__name__)
    if value is None or isinstance(value, (bool, str, bytes, Within)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return Floats(np.asarray(value))
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return ("array", str(value.dtype), value.shape, Floats(value.copy()))
        return ("array", str(value.dtype), value.shape, value.tolist())
    if _ndarray_like(value):
        return ("NDArray", tuple(value.shape), str(value.dtype), reduce(np.asarray(value.numpy()), depth + 1))
    if hasattr(value, "realize_cached_data") and hasattr(value, "numpy"):  # a Tensor
        return ("Tensor", reduce(np.asarray(value.numpy()), depth + 1))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(reduce(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), reduce(v, depth + 1)) for k, v in value.items()))
    if callable(value):
        return ("callable", getattr(value, "__name__", type(value).__name__))
    return ("object", type(value).__name__)


def observe(call, arguments=()) -> tuple:
    """Run ``call()``: ("returns", its value, the arguments after) or ("raises", the error's
    type name, the arguments after). NumPy's floating point warnings are silenced: the values
    say what happened."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            result = ("returns", reduce(call()))
        except Exception as err:  # the error's type is the observation
            result = ("raises", type(err).__name__)
        return result + (reduce(tuple(arguments)),)


def _floats_differ(a: np.ndarray, b: np.ndarray) -> str | None:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.dtype.kind == "c":
        return _floats_differ(a.real, b.real) or _floats_differ(a.imag, b.imag)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if (nan_a != nan_b).any():
        where = np.argwhere(nan_a != nan_b)[0]
        return f"NaN at {tuple(where)} in one only ({a[tuple(where)]} vs {b[tuple(where)]})"
    inf_a, inf_b = np.isinf(a) & ~nan_a, np.isinf(b) & ~nan_b
    if (inf_a != inf_b).any() or (a[inf_a] != b[inf_b]).any():
        return "infinities differ"
    finite = ~(nan_a | inf_a)
    if not finite.any():
        return None
    eps = np.finfo(a.dtype).eps
    x, y = a[finite].astype(np.float64), b[finite].astype(np.float64)
    scale = max(float(np.max(np.abs(x))), float(np.max(np.abs(y))), np.finfo(a.dtype).tiny)
    gap = np.abs(x - y)
    if (gap > 16 * eps * np.maximum(np.abs(x), np.abs(y)) + 16 * eps * scale * 1e-3).any():
        i = int(np.argmax(gap))
        return f"values differ ({x[i]!r} vs {y[i]!r})"
    return None


def differs(a, b, where: str = "") -> str | None:
    """None when the trees agree (floats to a few ulps of their dtype), else where they do not."""
    if isinstance(a, Within) and isinstance(b, Within):
        close = abs(a.value - b.value) <= a.rtol * max(abs(a.value), abs(b.value))
        return None if close else f"{where}: {a.value} vs {b.value} (more than {a.rtol:g} apart, relative)"
    if isinstance(a, Floats) or isinstance(b, Floats):
        if not (isinstance(a, Floats) and isinstance(b, Floats)):
            return f"{where}: {a!r} vs {b!r}"
        why = _floats_differ(a.values, b.values)
        return f"{where}: {why}" if why else None
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(a) != len(b):
            return f"{where}: {_short(a)} vs {_short(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            why = differs(x, y, f"{where}[{i}]")
            if why:
                return why
        return None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return None
    return None if a == b else f"{where}: {_short(a)} vs {_short(b)}"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 200 else text[:200] + "..."
