# Generated from course_lib/nd_fallbacks.py for the release of 06_gradient_checking by `python -m course_tools.build` - do not edit.
"""NDArray views through the array module, for releases before assignment 03.

Until students write the stride arithmetic themselves (assignment 03), the releases of
assignments 01 and 02 replace the solution regions of ``compact_strides``, ``permute``,
``broadcast_to`` and ``__getitem__`` by one-line FALLBACKs (course_tools/regions.py) that
call these functions: NumPy or CuPy builds the view, and ``adopt_view`` reads its shape,
strides and offset back into an NDArray over the same buffer.
"""
from __future__ import annotations

import numpy  # shapes and strides are host-side integers, on every device


def compact_strides(shape) -> tuple[int, ...]:
    """Row-major strides in elements through NumPy: ``(2, 3, 4) -> (12, 4, 1)``."""
    shape = tuple(shape)
    return tuple(int(n) for n in numpy.cumprod((1, *shape[:0:-1]))[::-1]) if shape else ()


def module_slices(slices) -> tuple:
    """Slices normalised by ``slice.indices`` (a reverse slice down to 0 has stop -1) in the
    terms NumPy and CuPy index with (stop None)."""
    return tuple(slice(s.start, s.stop if s.stop >= 0 else None, s.step) for s in slices)


def _address(data, on_host: bool) -> int:
    """Where ``data`` (an array of a device's module) starts in memory. CuPy arrays describe
    themselves with ``__cuda_array_interface__`` only; NumPy arrays with ``__array_interface__``."""
    interface = data.__array_interface__ if on_host else data.__cuda_array_interface__
    return interface["data"][0]


def adopt_view(array, view):
    """The NDArray for ``view``, a view of ``array``'s buffer made by the device's module.

    array: an NDArray; view: (any shape) an array of ``array.device.xp`` sharing its buffer.
    """
    itemsize = array.handle.itemsize
    if view.size == 0:  # no element to locate: any offset will do
        return array.make(view.shape, strides=(0,) * len(view.shape), device=array.device,
                          handle=array.handle, offset=array.offset)
    on_host = array.device.is_host
    offset = (_address(view, on_host) - _address(array.handle, on_host)) // itemsize
    return array.make(view.shape, strides=tuple(s // itemsize for s in view.strides), device=array.device,
                      handle=array.handle, offset=offset)
