"""The stand-in's ufuncs: NumPy's, restricted to device arrays and scalars as CuPy's are.

CuPy's documentation ("Differences between CuPy and NumPy"): universal functions only work
with CuPy arrays or scalars; they do not accept other objects such as lists or NumPy arrays.
CuPy computes on the device and never emits NumPy's floating-point RuntimeWarnings.
"""
from __future__ import annotations

import numpy

from ._core import UFUNCS, ndarray, wrap
from ._core import _value as operand


class ufunc:
    """A NumPy ufunc applied to the stand-in's arrays: ``add(x, y, out=None, dtype=None)``."""

    def __init__(self, numpy_ufunc):
        self._ufunc = numpy_ufunc
        self.__name__ = numpy_ufunc.__name__
        self.nin, self.nout = numpy_ufunc.nin, numpy_ufunc.nout

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, dtype=None, casting="same_kind"):
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} arguments, got {len(args)}")
        values = [operand(a, self.__name__) for a in args]
        if out is not None and not isinstance(out, ndarray):
            raise TypeError(f"{self.__name__}: output must be a device array, got {type(out)}")
        with numpy.errstate(all="ignore"):
            result = self._ufunc(*values, out=None if out is None else out._a, dtype=dtype, casting=casting)
        return out if out is not None else wrap(result)


_NAMES = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "negative",
    "positive", "absolute", "sign", "maximum", "minimum", "fmax", "fmin", "matmul",
    # exponents, logarithms, powers, trigonometry
    "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "sqrt", "square", "reciprocal",
    "sin", "cos", "tan", "tanh", "sinh", "cosh", "arctan",
    # rounding
    "floor", "ceil", "trunc", "rint",
    # comparisons and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "isfinite", "isnan", "isinf",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert",
]

for _name in _NAMES:
    UFUNCS[_name] = ufunc(getattr(numpy, _name))

globals().update(UFUNCS)
abs = UFUNCS["absolute"]  # noqa: A001  (CuPy has both names)
true_divide = UFUNCS["divide"]

__all__ = ["ufunc", "abs", "true_divide", *_NAMES]
