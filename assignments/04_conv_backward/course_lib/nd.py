# Generated from course_lib/nd.py for the release of 04_conv_backward by `python -m course_tools.build` - do not edit.
"""NDArray: a strided view over a flat 1-D buffer.

An NDArray is four numbers and a buffer:

    handle   a flat 1-D array owned by the device's array module (numpy or cupy)
    shape    the logical shape, e.g. (2, 3)
    strides  how many *elements* (not bytes) to jump along each axis; may be negative or 0
    offset   where element (0, 0, ..., 0) lives inside handle

Element ``a[i0, i1, ...]`` is ``handle[offset + i0*strides[0] + i1*strides[1] + ...]``.
Transposes, broadcasts, slices and flips only change shape/strides/offset: no data moves.
``compact()`` copies a view into a fresh row-major buffer when an operation needs one.

Arithmetic runs through the device's array module on the strided view, so the same code
serves NumPy on ``cpu()`` and CuPy on ``cuda()``.
"""
from __future__ import annotations

import math
import numbers
from typing import Sequence

from . import nd_fallbacks
from .backend import Device, cpu, default_device

SUPPORTED_FLOAT_DTYPES = ("float16", "float32", "float64")
# Integer and boolean arrays exist for indices and masks (pooling, data labels).
SUPPORTED_DTYPES = SUPPORTED_FLOAT_DTYPES + ("int32", "int64", "bool")
DEFAULT_DTYPE = "float32"


_DTYPE_NAMES: dict = {}


def prod(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", None) or str(dtype)
    if name == "float":
        name = "float64"
    return name


def _check_dtype(dtype) -> str:
    name = _dtype_name(dtype)
    if name not in SUPPORTED_DTYPES:
        raise TypeError(f"unsupported dtype {name}; course_lib supports {', '.join(SUPPORTED_DTYPES)}")
    return name


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """The one axis normaliser: ``axis`` (None for every axis, an int, or a sequence of ints;
    negatives count from the end) as a sorted tuple of distinct axes in 0..ndim-1.

    NumPy integers are ints (``np.int64(0)``); a bool is not. ValueError for an axis out of
    range or repeated, TypeError for anything else. ``normalize_axes((2, -3), 3) == (0, 2)``,
    ``normalize_axes(None, 2) == (0, 1)``, ``normalize_axes(-1, 3) == (2,)``.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, numbers.Integral):
        axis = (axis,)
    try:
        axes = tuple(axis)
    except TypeError:
        raise TypeError(f"axes must be None, an int or a sequence of ints, got {axis!r}") from None
    out = []
    for ax in axes:
        if not isinstance(ax, numbers.Integral) or isinstance(ax, bool):
            raise TypeError(f"axes must be ints, got {ax!r} in {axes}")
        if not -ndim <= ax < ndim:
            raise ValueError(f"axis {ax} is out of range for an array with {ndim} dimensions")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {axes}")
    return tuple(sorted(out))


def _normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """What every caller in course_lib uses: ``normalize_axes`` (assignment 01's task), looked up
    when called, so that a notebook's ``implements(nd, "normalize_axes")`` and a grader's lent
    reference reach every op and NDArray method that takes axes."""
    return normalize_axes(axis, ndim)


class NDArray:
    """A strided n-dimensional array on a device. See the module docstring."""

    # _compact caches is_compact() (None: not known yet): a view never changes its geometry.
    __slots__ = ("_handle", "_shape", "_size", "_strides", "_offset", "_device", "_compact")
    __array_priority__ = 1000  # so `numpy_scalar * NDArray` calls our __rmul__

    # ------------------------------------------------------------------ construction
    def __init__(self, other, device: Device | None = None, dtype=None):
        """Copy ``other`` (an NDArray, a numpy/cupy array, a list or a scalar) onto ``device``."""
        device = device or (other.device if isinstance(other, NDArray) else default_device())
        if isinstance(other, NDArray):
            data = other.to(device)._view()
            if dtype is not None:
                data = data.astype(_check_dtype(dtype))
        else:
            data = _as_device_array(other, device, dtype)
        _check_dtype(data.dtype)
        data = device.xp.array(data, order="C", copy=True)  # an NDArray owns its buffer
        self._init(data.reshape(-1), tuple(data.shape), None, 0, device)

    def _init(self, handle, shape, strides, offset, device):
        self._handle = handle
        self._shape = tuple(map(int, shape))
        self._size = prod(self._shape)
        self._strides = tuple(map(int, strides)) if strides is not None else compact_strides(self._shape)
        self._offset = int(offset)
        self._device = device
        # Row-major strides over the whole buffer from element 0: compact, known without a check.
        self._compact = True if strides is None and offset == 0 and handle.size == self._size else None

    @staticmethod
    def make(shape, strides=None, device: Device | None = None, handle=None, offset: int = 0,
             dtype=None) -> "NDArray":
        """A new NDArray over ``handle`` (a flat buffer of the device), or over a fresh
        uninitialised buffer of ``prod(shape)`` elements when ``handle`` is None.

        Raises ValueError if some element of the view would fall outside the buffer.
        """
        device = device or default_device()
        shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in shape):
            raise ValueError(f"negative dimension in shape {shape}")
        if handle is None:
            handle = device.xp.empty(prod(shape), dtype=_check_dtype(dtype or DEFAULT_DTYPE))
        elif handle.ndim != 1:
            raise ValueError(f"handle must be a flat 1-D buffer, got one of shape {tuple(handle.shape)}")
        array = NDArray.__new__(NDArray)
        array._init(handle, shape, strides, offset, device)
        if len(array._strides) != len(shape):
            raise ValueError(f"strides {array._strides} do not match shape {shape}")
        array._check_bounds()
        return array

    def _check_bounds(self):
        if self._size == 0:
            return
        low = high = self._offset
        for n, s in zip(self._shape, self._strides):  # (a loop: every view passes here)
            if s < 0:
                low += (n - 1) * s
            else:
                high += (n - 1) * s
        if low < 0 or high >= self._handle.size:
            raise ValueError(
                f"view with shape {self._shape}, strides {self._strides} and offset {self._offset} "
                f"reaches elements {low}..{high}, outside a buffer of {self._handle.size} elements"
            )

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def strides(self) -> tuple[int, ...]:
        return self._strides

    @property
    def offset(self) -> int:
        return self._offset

    @property
    def device(self) -> Device:
        return self._device

    @property
    def dtype(self) -> str:
        dtype = self._handle.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:  # numpy's dtype.name is computed in Python each time: remember it
            name = _DTYPE_NAMES[dtype] = dtype.name
        return name

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return self._size

    @property
    def handle(self):
        """The flat buffer this array is a view of."""
        return self._handle

    @property
    def nbytes(self) -> int:
        return self.size * self._handle.itemsize

    def __repr__(self) -> str:
        return f"NDArray({self.numpy()!r}, device={self._device!r})"

    def __str__(self) -> str:
        return str(self.numpy())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d NDArray")
        return self._shape[0]

    # ------------------------------------------------------------------ the view onto xp
    def _view(self):
        """This array as a (possibly strided) array of the device's module, sharing memory."""
        xp = self._device.xp
        if self.size == 0:
            return xp.empty(self._shape, dtype=self._handle.dtype)
        if self.is_compact():
            return self._handle.reshape(self._shape)
        itemsize = self._handle.itemsize
        strides = tuple(s * itemsize for s in self._strides)
        if self._device.is_host:
            # NumPy's own constructor: the same view as as_strided, at a tenth of its cost.
            return xp.ndarray(self._shape, dtype=self._handle.dtype, buffer=self._handle,
                              offset=self._offset * itemsize, strides=strides)
        # as_strided does no bounds checks; make() and every view constructor checked them.
        return xp.lib.stride_tricks.as_strided(self._handle[self._offset:], shape=self._shape, strides=strides)

    @staticmethod
    def _wrap(data, device: Device) -> "NDArray":
        """Own a freshly computed array of the device's module as a compact NDArray."""
        xp = device.xp
        data = xp.asarray(data)  # reductions may hand back a NumPy scalar
        if not data.flags.c_contiguous:
            data = xp.ascontiguousarray(data)  # (not for 0-d: it would make them 1-d)
        array = NDArray.__new__(NDArray)
        array._init(data.reshape(-1), data.shape, None, 0, device)
        return array

    def numpy(self):
        """A NumPy copy of this array, in host memory (an explicit copy from a GPU)."""
        return self._device.to_numpy(self._view())

    def to(self, device: Device) -> "NDArray":
        """This array on ``device`` (itself if it is there already), through the host."""
        if device == self._device:
            return self
        return NDArray._wrap(device.xp.asarray(self.numpy()), device)

    def astype(self, dtype) -> "NDArray":
        dtype = _check_dtype(dtype)
        if dtype == self.dtype:
            return self
        return NDArray._wrap(self._view().astype(dtype), self._device)

    # ------------------------------------------------------------------ compactness
    def is_compact(self) -> bool:
        """True when the array is row-major, starts at element 0 and covers its whole buffer."""
        if self._compact is None:
            self._compact = (self._strides == compact_strides(self._shape)
                             and self._offset == 0 and self.size == self._handle.size)
        return self._compact

    def compact(self) -> "NDArray":
        """A row-major copy of this view (the array itself if it is already compact)."""
        if self.is_compact():
            return self
        return NDArray._wrap(self._view(), self._device)

    # ------------------------------------------------------------------ views
    def as_strided(self, shape, strides) -> "NDArray":
        """A view of the same buffer with a new shape and strides (offset kept)."""
        return NDArray.make(shape, strides=strides, device=self._device, handle=self._handle,
                            offset=self._offset)

    def reshape(self, new_shape) -> "NDArray":
        """A view with a new shape. The array must be compact (call ``.compact()`` first)."""
        new_shape = _resolve_reshape(tuple(new_shape), self.size, self._shape)
        if not self.is_compact():
            raise ValueError(
                f"reshape of a non-compact array (shape {self._shape}, strides {self._strides}, "
                f"offset {self._offset}) would need a copy; call .compact() first")
        return self.as_strided(new_shape, compact_strides(new_shape))

    def permute(self, new_axes) -> "NDArray":
        """Reorder the axes: ``a.permute((2, 0, 1))`` of an (H, W, C) array is (C, H, W). A view."""
        new_axes = tuple(new_axes)
        if sorted(a % self.ndim if self.ndim else a for a in new_axes) != list(range(self.ndim)):
            raise ValueError(f"permute axes {new_axes} are not a permutation of {self.ndim} axes")
        new_axes = tuple(a % self.ndim for a in new_axes)
        shape = tuple(self._shape[a] for a in new_axes)
        strides = tuple(self._strides[a] for a in new_axes)
        return self.as_strided(shape, strides)

    def broadcast_to(self, new_shape) -> "NDArray":
        """A view with axes of size 1 repeated (stride 0); new leading axes may be added."""
        new_shape = tuple(int(s) for s in new_shape)
        if len(new_shape) < self.ndim:
            raise ValueError(f"cannot broadcast shape {self._shape} to {new_shape}: fewer dimensions")
        lead = len(new_shape) - self.ndim
        for old, new in zip(self._shape, new_shape[lead:]):
            if old != new and old != 1:
                raise ValueError(f"cannot broadcast shape {self._shape} to {new_shape}")
        strides = (0,) * lead + tuple(
            stride if old == new else 0
            for old, new, stride in zip(self._shape, new_shape[lead:], self._strides))
        return self.as_strided(new_shape, strides)

    def _slice_view(self, idxs) -> "NDArray":
        if not isinstance(idxs, tuple):
            idxs = (idxs,)
        if len(idxs) > self.ndim:
            raise IndexError(f"too many indices ({len(idxs)}) for an array of shape {self._shape}")
        idxs = idxs + (slice(None),) * (self.ndim - len(idxs))
        slices = []
        for axis, (idx, n) in enumerate(zip(idxs, self._shape)):
            if isinstance(idx, numbers.Integral):
                if not -n <= idx < n:
                    raise IndexError(f"index {idx} is out of bounds for axis {axis} with size {n}")
                idx = idx % n
                idx = slice(idx, idx + 1, 1)
            elif not isinstance(idx, slice):
                raise TypeError(f"NDArray indices must be ints or slices, got {type(idx).__name__}")
            slices.append(slice(*idx.indices(n)))
        offset = self._offset
        shape, strides = [], []
        for sl, stride in zip(slices, self._strides):
            length = len(range(sl.start, sl.stop, sl.step))
            if length > 0:
                offset += sl.start * stride
            shape.append(length)
            strides.append(stride * sl.step)
        return NDArray.make(shape, strides=strides, device=self._device, handle=self._handle,
                            offset=offset)

    def __getitem__(self, idxs) -> "NDArray":
        """A view selected by ints and slices (steps allowed, negative too).

        As in needle, an integer index keeps its axis with size 1, so the result always has
        as many dimensions as the array: ``a[1, 2:4]`` of a (3, 5) array is (1, 2).
        """
        return self._slice_view(idxs)

    def __setitem__(self, idxs, other) -> None:
        """Write ``other`` (an NDArray of the selected shape, or a scalar) into the view, in place."""
        view = self._slice_view(idxs)
        target = view._view()
        if isinstance(other, NDArray):
            _check_same_device(self, other, "setitem")
            if other.shape != view.shape and prod(other.shape) == view.size:
                other = other.compact().reshape(view.shape)
            if other.shape != view.shape:
                raise ValueError(f"cannot assign an array of shape {other.shape} to a selection of shape {view.shape}")
            target[...] = other._view()
        else:
            target[...] = other

    def flip(self, axes) -> "NDArray":
        """Reverse the order of elements along ``axes``, as a compact copy made from a view of
        the same buffer (assignment 03 works out its offset and strides)."""
        axes = _normalize_axes(axes, self.ndim)
        strides = list(self._strides)
        offset = self._offset
        for ax in axes:
            offset += (self._shape[ax] - 1) * self._strides[ax]
            strides[ax] = -self._strides[ax]
        view = NDArray.make(self._shape, strides=strides, device=self._device,
                            handle=self._handle, offset=offset)
        return view.compact()

    def pad(self, axes, value=0.0) -> "NDArray":
        """Pad with ``value``: ``axes`` is ((before, after), ...) with one pair per axis."""
        axes = tuple(tuple(int(p) for p in pair) for pair in axes)
        if len(axes) != self.ndim or any(len(p) != 2 or min(p) < 0 for p in axes):
            raise ValueError(f"pad needs one non-negative (before, after) pair per axis of "
                             f"shape {self._shape}, got {axes}")
        new_shape = tuple(n + before + after for n, (before, after) in zip(self._shape, axes))
        out = full(new_shape, value, dtype=self.dtype, device=self._device)
        out[tuple(slice(before, before + n) for n, (before, _) in zip(self._shape, axes))] = self
        return out

    # ------------------------------------------------------------------ arithmetic
    def _binary(self, other, fn, name):
        if isinstance(other, NDArray):
            _check_same_device(self, other, name)
            if other.shape != self._shape:
                raise ValueError(f"{name}: shapes {self._shape} and {other.shape} differ; "
                                 f"broadcast explicitly with broadcast_to")
            if other.dtype != self.dtype:
                raise TypeError(f"{name}: dtypes {self.dtype} and {other.dtype} differ; "
                                f"convert explicitly with astype")
            return NDArray._wrap(fn(self._view(), other._view()), self._device)
        if isinstance(other, numbers.Number):
            # Python scalars are weak: the result keeps this array's dtype.
            return NDArray._wrap(fn(self._view(), other).astype(self.dtype, copy=False), self._device)
        return NotImplemented

    def __add__(self, other):
        return self._binary(other, lambda a, b: a + b, "add")

    __radd__ = __add__

    def __sub__(self, other):
        return self._binary(other, lambda a, b: a - b, "subtract")

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: b - a, "subtract")

    def __mul__(self, other):
        return self._binary(other, lambda a, b: a * b, "multiply")

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._binary(other, lambda a, b: a / b, "divide")

    def __rtruediv__(self, other):
        return self._binary(other, lambda a, b: b / a, "divide")

    def __pow__(self, other):
        return self._binary(other, lambda a, b: a ** b, "power")

    def __neg__(self):
        return NDArray._wrap(-self._view(), self._device)

    def maximum(self, other):
        xp = self._device.xp
        return self._binary(other, xp.maximum, "maximum")

    # Comparisons give 1.0 / 0.0 in the array's own dtype, so masks multiply gradients directly.
    def _compare(self, other, fn, name):
        return self._binary(other, lambda a, b: fn(a, b).astype(self.dtype), name)

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b, "==")

    def __ne__(self, other):
        return self._compare(other, lambda a, b: a != b, "!=")

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b, ">=")

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b, ">")

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b, "<=")

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b, "<")

    __hash__ = None

    def log(self):
        return NDArray._wrap(self._device.xp.log(self._view()), self._device)

    def exp(self):
        return NDArray._wrap(self._device.xp.exp(self._view()), self._device)

    def tanh(self):
        return NDArray._wrap(self._device.xp.tanh(self._view()), self._device)

    def abs(self):
        return NDArray._wrap(self._device.xp.abs(self._view()), self._device)

    def sqrt(self):
        return NDArray._wrap(self._device.xp.sqrt(self._view()), self._device)

    def replace_nonfinite(self, value: float) -> "NDArray":
        """A copy with every NaN and +-inf replaced by ``value``."""
        xp, view = self._device.xp, self._view()
        return NDArray._wrap(xp.where(xp.isfinite(view), view, xp.asarray(value, dtype=view.dtype)), self._device)

    def isfinite(self) -> bool:
        """True when every element is finite (no NaN, no inf)."""
        return bool(self._device.xp.isfinite(self._view()).all())

    # ------------------------------------------------------------------ reductions
    def _reduce(self, fn, axis, keepdims):
        axes = _normalize_axes(axis, self.ndim)
        return NDArray._wrap(fn(self._view(), axis=axes, keepdims=keepdims), self._device)

    def sum(self, axis=None, keepdims: bool = False) -> "NDArray":
        """Sum over ``axis`` (None: all axes; an int or a tuple of ints)."""
        return self._reduce(self._device.xp.sum, axis, keepdims)

    def max(self, axis=None, keepdims: bool = False) -> "NDArray":
        """Maximum over ``axis`` (None: all axes); NaN propagates."""
        return self._reduce(self._device.xp.max, axis, keepdims)

    def argmax(self, axis: int) -> "NDArray":
        """int64 index of the first maximum along ``axis`` (the axis is removed); NaN counts as
        the largest value, as in NumPy."""
        (ax,) = _normalize_axes(axis, self.ndim)
        return NDArray._wrap(self._device.xp.argmax(self._view(), axis=ax).astype("int64"), self._device)

    # ------------------------------------------------------------------ matmul
    def __matmul__(self, other: "NDArray") -> "NDArray":
        """Matrix product of the last two axes, batch axes broadcast: (..., n, k) @ (..., k, m)."""
        if not isinstance(other, NDArray):
            return NotImplemented
        _check_same_device(self, other, "matmul")
        if self.ndim < 2 or other.ndim < 2:
            raise ValueError(f"matmul needs at least 2-D operands, got shapes {self._shape} and {other.shape}")
        if self._shape[-1] != other.shape[-2]:
            raise ValueError(f"matmul: shapes {self._shape} and {other.shape} do not align "
                             f"({self._shape[-1]} != {other.shape[-2]})")
        batch_shape(self._shape[:-2], other.shape[:-2], f"matmul of {self._shape} and {other.shape}")
        if other.dtype != self.dtype:
            raise TypeError(f"matmul: dtypes {self.dtype} and {other.dtype} differ")
        xp = self._device.xp
        if self.dtype == "float16" and self._device.is_host:
            return NDArray._wrap(_float16_matmul_on_host(xp, self._view(), other._view()), self._device)
        return NDArray._wrap(xp.matmul(self._view(), other._view()), self._device)


# ---------------------------------------------------------------------- helpers
FLOAT16_MATMUL_CHUNK_BYTES = 64 << 10


def _float16_matmul_on_host(xp, a, b):
    """a @ b for float16 NumPy (xp) arrays a: (..., n, k), b: (..., k, m), through float32 BLAS.

    NumPy has no BLAS for float16: its loop converts each product to float32, adds in float32
    and rounds the sum to float16 once. float32 BLAS and one rounding is that arithmetic (the
    same bits up to the order of the float32 additions) about twenty times faster; GPUs' float16
    matrix multiplies accumulate in float32 too. The float32 copies of a are made a few rows at
    a time (FLOAT16_MATMUL_CHUNK_BYTES), so that a float16 step still needs float16's memory:
    07 measures it.
    """
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = xp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = xp.empty(batch + (n, m), dtype=xp.float16)
    b32 = b.astype(xp.float32)
    rows = max(1, FLOAT16_MATMUL_CHUNK_BYTES // (4 * (k + m) * max(1, prod(batch))))
    for start in range(0, n, rows):
        out[..., start:start + rows, :] = xp.matmul(a[..., start:start + rows, :].astype(xp.float32), b32)
    return out


def axis_slice(x: NDArray, axis: int, start: int, stop: int) -> NDArray:
    """x[..., start:stop, ...] along ``axis``, a view built by the library (not by the
    students' NDArray.__getitem__, which some releases leave to them): how the library cuts
    work into pieces (Conv.evaluate, course_lib.parallel)."""
    shape = list(x.shape)
    shape[axis] = stop - start
    return NDArray.make(shape, strides=x.strides, device=x.device, handle=x.handle,
                        offset=x.offset + start * x.strides[axis])


def compact_strides(shape) -> tuple[int, ...]:
    """Row-major (C order) strides of ``shape``, in elements (not bytes): a tuple with one int
    per axis, ``()`` for the 0-d shape ``()``."""
    strides = []
    step = 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def batch_shape(a: tuple, b: tuple, what: str) -> tuple:
    """The broadcast of two batch shapes, or a ValueError naming both."""
    out = []
    for x, y in zip(((1,) * (len(b) - len(a))) + a, ((1,) * (len(a) - len(b))) + b):
        if x != y and 1 not in (x, y):
            raise ValueError(f"{what}: batch shapes {a} and {b} cannot be broadcast together")
        out.append(max(x, y))
    return tuple(out)


def _resolve_reshape(new_shape: tuple, size: int, old_shape: tuple) -> tuple:
    if new_shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 allowed, got {new_shape}")
    if -1 in new_shape:
        known = prod(s for s in new_shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of shape {old_shape} into {new_shape}")
        new_shape = tuple(size // known if s == -1 else s for s in new_shape)
    if prod(new_shape) != size or any(s < 0 for s in new_shape):
        raise ValueError(f"cannot reshape array of shape {old_shape} ({size} elements) into {new_shape}")
    return tuple(int(s) for s in new_shape)


def _check_same_device(a: NDArray, b: NDArray, what: str):
    if a.device != b.device:
        raise ValueError(f"{what}: arrays on different devices ({a.device!r} and {b.device!r}); "
                         f"move one with .to(device)")


def _as_device_array(obj, device: Device, dtype):
    xp = device.xp
    if dtype is not None:
        dtype = _check_dtype(dtype)
    if hasattr(obj, "__cuda_array_interface__") and device.is_host:
        obj = obj.get()  # a CuPy array brought to the host, explicitly
    if hasattr(obj, "dtype") and hasattr(obj, "shape"):
        name = _dtype_name(obj.dtype)
        if dtype is None and name not in SUPPORTED_DTYPES:
            raise TypeError(f"unsupported dtype {name}; course_lib supports {', '.join(SUPPORTED_DTYPES)}")
        return xp.asarray(obj, dtype=dtype or name)
    data = xp.asarray(obj)
    if dtype is None:
        kind = data.dtype.kind
        if kind in "iuf":
            dtype = DEFAULT_DTYPE  # Python numbers and lists become the default float type
        elif kind == "b":
            dtype = "bool"
        else:
            raise TypeError(f"cannot make an NDArray from {type(obj).__name__} with dtype {data.dtype}")
    return data.astype(dtype)


# ---------------------------------------------------------------------- constructors
def array(obj, dtype=None, device: Device | None = None) -> NDArray:
    """An NDArray copy of ``obj`` (a list, scalar, numpy/cupy array or NDArray).

    dtype: kept from a numpy/cupy array or NDArray when None; Python numbers become float32.
    """
    return NDArray(obj, device=device, dtype=dtype)


def empty(shape, dtype=DEFAULT_DTYPE, device: Device | None = None) -> NDArray:
    return NDArray.make(shape, device=device, dtype=dtype)


def full(shape, fill_value, dtype=DEFAULT_DTYPE, device: Device | None = None) -> NDArray:
    device = device or default_device()
    return NDArray._wrap(device.xp.full(tuple(shape), fill_value, dtype=_check_dtype(dtype)), device)


def zeros(shape, dtype=DEFAULT_DTYPE, device: Device | None = None) -> NDArray:
    return full(shape, 0, dtype=dtype, device=device)


def ones(shape, dtype=DEFAULT_DTYPE, device: Device | None = None) -> NDArray:
    return full(shape, 1, dtype=dtype, device=device)


def arange(n: int, dtype="int64", device: Device | None = None) -> NDArray:
    device = device or default_device()
    return NDArray._wrap(device.xp.arange(n, dtype=_check_dtype(dtype)), device)


__all__ = ["NDArray", "array", "empty", "full", "zeros", "ones", "arange", "compact_strides",
           "cpu", "default_device", "SUPPORTED_FLOAT_DTYPES", "DEFAULT_DTYPE"]
