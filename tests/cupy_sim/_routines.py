"""The stand-in's functions: creation, transfers, reductions, shaping and logic.

Only functions CuPy has, with CuPy's signatures, and only those course_lib and its tests
need; NumPy functions without a counterpart here fail (see ``ndarray.__array_function__``).
Functions take device arrays; a NumPy array where a device array belongs is a TypeError
(the stand-in is stricter than CuPy here: some CuPy functions accept host arrays silently).
"""
from __future__ import annotations

import numpy

from ._core import _owning, _value, is_scalar, ndarray, wrap


def _device(a, what: str) -> ndarray:
    if not isinstance(a, ndarray):
        raise TypeError(f"{what}: Unsupported type {type(a)} (expected a device array)")
    return a


# ---------------------------------------------------------------------- creation and transfers
def array(obj, dtype=None, copy=True, order="K", ndmin=0) -> ndarray:
    """A device array from a device array (copied), a NumPy array (host-to-device), a list
    or a scalar. Lists holding device arrays are refused (NumPy would convert them implicitly)."""
    if isinstance(obj, ndarray):
        if not copy and (dtype is None or numpy.dtype(dtype) == obj.dtype) and ndmin <= obj.ndim:
            return obj
        return _owning(numpy.array(obj._a, dtype=dtype, copy=True, order=order, ndmin=ndmin))
    return _owning(numpy.array(obj, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def asarray(a, dtype=None, order=None) -> ndarray:
    return array(a, dtype=dtype, copy=False, order=order or "K")


def ascontiguousarray(a, dtype=None) -> ndarray:
    a = asarray(a, dtype=dtype)
    return a if a._a.flags.c_contiguous else _owning(numpy.ascontiguousarray(a._a))


def asnumpy(a, stream=None, order="C", out=None) -> numpy.ndarray:
    """The explicit device-to-host copy (host arrays pass through, as in CuPy)."""
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out)
    return numpy.asarray(a, order=order)


def empty(shape, dtype=float, order="C") -> ndarray:
    return _owning(numpy.empty(shape, dtype=dtype, order=order))


def zeros(shape, dtype=float, order="C") -> ndarray:
    return _owning(numpy.zeros(shape, dtype=dtype, order=order))


def ones(shape, dtype=float, order="C") -> ndarray:
    return _owning(numpy.ones(shape, dtype=dtype, order=order))


def full(shape, fill_value, dtype=None, order="C") -> ndarray:
    return _owning(numpy.full(shape, _value(fill_value, "full"), dtype=dtype, order=order))


def arange(start, stop=None, step=1, dtype=None) -> ndarray:
    for bound in (start, stop, step):
        if bound is not None and not is_scalar(bound):
            raise TypeError(f"arange: Unsupported type {type(bound)}")
    return _owning(numpy.arange(start, stop, step, dtype=dtype) if stop is not None
                   else numpy.arange(start, dtype=dtype))


def empty_like(a, dtype=None) -> ndarray:
    return _owning(numpy.empty_like(_device(a, "empty_like")._a, dtype=dtype))


def zeros_like(a, dtype=None) -> ndarray:
    return _owning(numpy.zeros_like(_device(a, "zeros_like")._a, dtype=dtype))


def ones_like(a, dtype=None) -> ndarray:
    return _owning(numpy.ones_like(_device(a, "ones_like")._a, dtype=dtype))


def full_like(a, fill_value, dtype=None) -> ndarray:
    return _owning(numpy.full_like(_device(a, "full_like")._a, _value(fill_value, "full_like"), dtype=dtype))


def copy(a, order="K") -> ndarray:
    return _device(a, "copy").copy(order="C" if order == "K" else order)


# ---------------------------------------------------------------------- reductions
def sum(a, axis=None, dtype=None, out=None, keepdims=False):  # noqa: A001
    return _device(a, "sum").sum(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def prod(a, axis=None, dtype=None, out=None, keepdims=False):
    return _device(a, "prod").prod(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False):
    return _device(a, "mean").mean(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def amax(a, axis=None, out=None, keepdims=False):
    return _device(a, "amax").max(axis=axis, out=out, keepdims=keepdims)


def amin(a, axis=None, out=None, keepdims=False):
    return _device(a, "amin").min(axis=axis, out=out, keepdims=keepdims)


max = amax  # noqa: A001
min = amin  # noqa: A001


def argmax(a, axis=None, dtype=None, out=None, keepdims=False):
    return _device(a, "argmax").argmax(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def argmin(a, axis=None, dtype=None, out=None, keepdims=False):
    return _device(a, "argmin").argmin(axis=axis, dtype=dtype, out=out, keepdims=keepdims)


def all(a, axis=None, out=None, keepdims=False):  # noqa: A001
    return _device(a, "all").all(axis=axis, out=out, keepdims=keepdims)


def any(a, axis=None, out=None, keepdims=False):  # noqa: A001
    return _device(a, "any").any(axis=axis, out=out, keepdims=keepdims)


def count_nonzero(a, axis=None):
    return wrap(numpy.count_nonzero(_device(a, "count_nonzero")._a, axis=axis))


# ---------------------------------------------------------------------- shaping
def reshape(a, newshape, order="C") -> ndarray:
    return _device(a, "reshape").reshape(newshape, order=order)


def ravel(a, order="C") -> ndarray:
    return _device(a, "ravel").ravel(order=order)


def transpose(a, axes=None) -> ndarray:
    return _device(a, "transpose").transpose(axes)


def swapaxes(a, axis1, axis2) -> ndarray:
    return _device(a, "swapaxes").swapaxes(axis1, axis2)


def moveaxis(a, source, destination) -> ndarray:
    return wrap(numpy.moveaxis(_device(a, "moveaxis")._a, source, destination), a)


def squeeze(a, axis=None) -> ndarray:
    return _device(a, "squeeze").squeeze(axis)


def expand_dims(a, axis) -> ndarray:
    return wrap(numpy.expand_dims(_device(a, "expand_dims")._a, axis), a)


def broadcast_to(array, shape) -> ndarray:
    return wrap(numpy.broadcast_to(_device(array, "broadcast_to")._a, shape), array)


def concatenate(tup, axis=0) -> ndarray:
    return _owning(numpy.concatenate([_device(a, "concatenate")._a for a in tup], axis=axis))


def stack(tup, axis=0) -> ndarray:
    return _owning(numpy.stack([_device(a, "stack")._a for a in tup], axis=axis))


# ---------------------------------------------------------------------- selection and logic
def where(condition, x=None, y=None) -> ndarray:
    if x is None and y is None:
        raise NotImplementedError("the stand-in implements where(condition, x, y) only")
    values = [_value(v, "where") for v in (condition, x, y)]
    return _owning(numpy.where(*values))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> ndarray:
    return _owning(numpy.isclose(_value(a, "isclose"), _value(b, "isclose"), rtol=rtol, atol=atol,
                                 equal_nan=equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> ndarray:
    """A 0-d device boolean, as CuPy's (not a Python bool)."""
    return isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan).all()


def array_equal(a1, a2, equal_nan=False) -> ndarray:
    a1, a2 = _device(a1, "array_equal"), _device(a2, "array_equal")
    return wrap(numpy.asarray(numpy.array_equal(a1._a, a2._a, equal_nan=equal_nan)))


def shares_memory(a, b, max_work=None) -> bool:
    return bool(numpy.shares_memory(_device(a, "shares_memory")._a, _device(b, "shares_memory")._a))


def may_share_memory(a, b, max_work=None) -> bool:
    return bool(numpy.may_share_memory(_device(a, "may_share_memory")._a, _device(b, "may_share_memory")._a))
