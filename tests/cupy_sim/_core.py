"""The stand-in's ndarray: a NumPy array kept out of NumPy's reach, with CuPy's manners.

``ndarray._a`` holds the data (a NumPy array in host memory) and ``ndarray._mem`` the pool
block it occupies (shared by views). Everything NumPy could use to get at ``_a`` implicitly
(``__array__``, ``__array_interface__``, the buffer protocol, ``__index__``) is refused or
absent, as on a CuPy array; the rules are listed in the package docstring.
"""
from __future__ import annotations

import numbers

import numpy

from . import cuda
from ._memory import Allocation

# Filled by _ufuncs: NumPy ufunc name -> the stand-in's ufunc (what __array_ufunc__ may call).
UFUNCS: dict = {}

IMPLICIT_CONVERSION_ERROR = ("Implicit conversion to a NumPy array is not allowed. "
                             "Please use `.get()` to construct a NumPy array explicitly.")
_UNSUPPORTED_KINDS = "OSUVMm"  # object, strings, void, datetimes: CuPy has no such dtypes


def is_scalar(value) -> bool:
    """Python and NumPy scalars: what CuPy's kernels accept besides device arrays."""
    return isinstance(value, (bool, int, float, complex, numpy.generic))


def _owning(result: numpy.ndarray) -> "ndarray":
    if result.dtype.kind in _UNSUPPORTED_KINDS:
        raise TypeError(f"Unsupported dtype {result.dtype}")
    array = ndarray.__new__(ndarray)
    array._a = result
    array._mem = Allocation(result.nbytes, result.__array_interface__["data"][0]) if result.nbytes else None
    return array


def wrap(result, *sources: "ndarray") -> "ndarray":
    """The stand-in array for a NumPy ``result`` computed from ``sources``: a view sharing the
    pool block of the source it overlaps, else a new block (NumPy scalars become 0-d arrays)."""
    if not isinstance(result, numpy.ndarray):
        return _owning(numpy.asarray(result))
    for source in sources:
        if result is source._a:
            return source
        if source._mem is not None and numpy.may_share_memory(result, source._a):
            view = ndarray.__new__(ndarray)
            view._a, view._mem = result, source._mem
            return view
    return _owning(result)


def _should_use_rop(x, y) -> bool:
    """CuPy's rule for ``x op y``: defer to ``y`` (return NotImplemented) when ``y`` opts out of
    NumPy's ufunc protocol, or has no protocol and a higher ``__array_priority__``."""
    try:
        y_ufunc = y.__array_ufunc__
    except AttributeError:
        return getattr(x, "__array_priority__", 0) < getattr(y, "__array_priority__", 0)
    return y_ufunc is None


def _index(key) -> tuple:
    """An index of ints, slices, None, Ellipsis and stand-in arrays, in NumPy's terms, ending in
    Ellipsis so that an integer index gives a 0-d view (CuPy never returns NumPy scalars)."""
    parts = key if isinstance(key, tuple) else (key,)
    out = []
    for part in parts:
        if isinstance(part, ndarray):
            out.append(part._a)
        elif part is None or part is Ellipsis or isinstance(part, (slice, numbers.Integral)):
            out.append(part)
        else:  # NumPy arrays and lists would be implicit host-to-device transfers
            raise TypeError(f"Unsupported index type {type(part)}: use integers, slices or device arrays")
    if not any(part is Ellipsis for part in out):
        out.append(Ellipsis)
    return tuple(out)


def _value(value, what: str):
    if isinstance(value, ndarray):
        return value._a
    if is_scalar(value):
        return value
    raise TypeError(f"{what}: Unsupported type {type(value)} (device arrays and scalars only)")


class _Flags:
    def __init__(self, a: numpy.ndarray, owndata: bool):
        self.c_contiguous = bool(a.flags.c_contiguous)
        self.f_contiguous = bool(a.flags.f_contiguous)
        self.owndata = owndata

    def __getitem__(self, name: str) -> bool:
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


class MemoryPointer:
    """``ndarray.data``: where the array starts (``ptr``) on the device."""

    def __init__(self, ptr: int):
        self.ptr = ptr
        self.device = cuda.Device(0)


class ndarray:
    """A multi-dimensional array on the stand-in device. See the package docstring."""

    __slots__ = ("_a", "_mem")
    __array_priority__ = 100  # CuPy's
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None or strides is not None:
            raise NotImplementedError("the stand-in makes arrays over new memory only")
        fresh = _owning(numpy.empty(shape, dtype=dtype, order=order))
        self._a, self._mem = fresh._a, fresh._mem

    # ------------------------------------------------------------------ attributes
    shape = property(lambda self: self._a.shape)
    strides = property(lambda self: self._a.strides)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    dtype = property(lambda self: self._a.dtype)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)

    @property
    def flags(self) -> _Flags:
        return _Flags(self._a, owndata=self._a.base is None)

    @property
    def T(self) -> "ndarray":
        return wrap(self._a.T, self)

    @property
    def data(self) -> MemoryPointer:
        return MemoryPointer(self._a.__array_interface__["data"][0] if self.size else 0)

    @property
    def device(self):
        return cuda.Device(0)

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "strides": None if self._a.flags.c_contiguous else self.strides,
                "data": (self.data.ptr, False), "version": 3, "stream": 1}

    # ------------------------------------------------------------------ NumPy's protocols
    def __array__(self, dtype=None, copy=None):
        raise TypeError(IMPLICIT_CONVERSION_ERROR)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """As CuPy: only plain calls, only ufuncs the stand-in has, operands that are device
        arrays, scalars or NumPy arrays (the stand-in's ufunc then refuses the NumPy arrays)."""
        if method != "__call__":
            return NotImplemented
        ours = UFUNCS.get(ufunc.__name__)
        if ours is None:
            return NotImplemented
        operands = inputs
        if "out" in kwargs:
            out = kwargs["out"]
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            operands += out
            kwargs["out"] = out[0]
        for x in operands:
            if not (isinstance(x, (ndarray, numpy.ndarray)) or is_scalar(x)):
                return NotImplemented
        return ours(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        """As CuPy: the function of the same name in the same submodule, if the stand-in has it."""
        import cupy_sim  # the package, which imports this module first: a real cycle

        module = cupy_sim
        try:
            for part in func.__module__.split(".")[1:]:
                module = getattr(module, part)
            ours = getattr(module, func.__name__)
        except AttributeError:
            return NotImplemented
        if ours is func or not callable(ours):
            return NotImplemented
        if any(t not in (ndarray, numpy.ndarray) for t in types):
            return NotImplemented
        return ours(*args, **kwargs)

    # ------------------------------------------------------------------ to the host, explicitly
    def get(self, stream=None, order="C", out=None) -> numpy.ndarray:
        if out is None:
            return numpy.array(self._a, order=order, copy=True)
        if not isinstance(out, numpy.ndarray) or out.dtype != self.dtype or out.shape != self.shape:
            raise TypeError("get(out=...) needs a numpy.ndarray of the same shape and dtype")
        out[...] = self._a
        return out

    def set(self, arr, stream=None) -> None:
        if not isinstance(arr, numpy.ndarray) or arr.dtype != self.dtype or arr.shape != self.shape:
            raise TypeError("set() needs a numpy.ndarray of the same shape and dtype")
        self._a[...] = arr

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __complex__(self):
        return complex(self._a)

    def __bool__(self):
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element (or none) is ambiguous.")
        return bool(self._a.item())

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a, spec)  # CuPy formats the host copy

    def __reduce__(self):
        from ._routines import array
        return array, (self.get(),)

    # ------------------------------------------------------------------ containers
    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, key) -> "ndarray":
        return wrap(self._a[_index(key)], self)

    def __setitem__(self, key, value) -> None:
        self._a[_index(key)] = _value(value, "__setitem__")

    # ------------------------------------------------------------------ methods
    def copy(self, order="C") -> "ndarray":
        return _owning(numpy.array(self._a, order=order, copy=True))

    def astype(self, dtype, order="K", casting=None, subok=None, copy=True) -> "ndarray":
        return wrap(self._a.astype(dtype, order=order, copy=copy), self)

    def reshape(self, *shape, order="C") -> "ndarray":
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], numbers.Integral) else shape
        return wrap(self._a.reshape(shape, order=order), self)

    def ravel(self, order="C") -> "ndarray":
        return wrap(self._a.ravel(order=order), self)

    def flatten(self) -> "ndarray":
        return self.copy().ravel()

    def transpose(self, *axes) -> "ndarray":
        return wrap(self._a.transpose(*axes), self)

    def swapaxes(self, axis1, axis2) -> "ndarray":
        return wrap(self._a.swapaxes(axis1, axis2), self)

    def squeeze(self, axis=None) -> "ndarray":
        return wrap(self._a.squeeze(axis), self)

    def fill(self, value) -> None:
        self._a.fill(_value(value, "fill"))

    def _reduce(self, name, axis, out, keepdims, **kwargs):
        with numpy.errstate(all="ignore"):
            result = getattr(self._a, name)(axis=axis, keepdims=keepdims, **kwargs)
        result = wrap(result)
        if out is None:
            return result
        out[...] = result
        return out

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return self._reduce("sum", axis, out, keepdims, dtype=dtype)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return self._reduce("prod", axis, out, keepdims, dtype=dtype)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return self._reduce("mean", axis, out, keepdims, dtype=dtype)

    def max(self, axis=None, out=None, keepdims=False):
        return self._reduce("max", axis, out, keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        return self._reduce("min", axis, out, keepdims)

    def argmax(self, axis=None, out=None, dtype=None, keepdims=False):
        result = self._reduce("argmax", axis, out, keepdims)
        return result if dtype is None else result.astype(dtype)

    def argmin(self, axis=None, out=None, dtype=None, keepdims=False):
        result = self._reduce("argmin", axis, out, keepdims)
        return result if dtype is None else result.astype(dtype)

    def all(self, axis=None, out=None, keepdims=False):
        return self._reduce("all", axis, out, keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        return self._reduce("any", axis, out, keepdims)

    # ------------------------------------------------------------------ operators
    def __pos__(self):
        return self

    def __neg__(self):
        return numpy.negative(self)

    def __abs__(self):
        return numpy.absolute(self)

    def __invert__(self):
        return numpy.invert(self)


def _binary(name: str):
    ufunc = getattr(numpy, name)

    def op(self, other):
        if isinstance(other, ndarray) or not _should_use_rop(self, other):
            return ufunc(self, other)  # NumPy's dispatch lands in __array_ufunc__ above
        return NotImplemented

    def rop(self, other):  # the last chance, as in CuPy
        return ufunc(other, self)

    def iop(self, other):
        return ufunc(self, other, out=(self,))

    return op, rop, iop


for _dunder, _name in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "divide"),
                       ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"),
                       ("matmul", "matmul"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                       ("xor", "bitwise_xor")]:
    _op, _rop, _iop = _binary(_name)
    setattr(ndarray, f"__{_dunder}__", _op)
    setattr(ndarray, f"__r{_dunder}__", _rop)
    setattr(ndarray, f"__i{_dunder}__", _iop)

for _dunder, _name in [("lt", "less"), ("le", "less_equal"), ("eq", "equal"), ("ne", "not_equal"),
                       ("gt", "greater"), ("ge", "greater_equal")]:
    setattr(ndarray, f"__{_dunder}__", _binary(_name)[0])
