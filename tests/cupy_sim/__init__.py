"""cupy_sim: a strict stand-in for CuPy, so that course_lib's GPU path runs on any machine.

Test-only. The test suite builds ``CUDADevice("cuda_sim", "cupy_sim")`` from it (see
tests/conftest.py): the device-parametrised tests then run course_lib's CUDA code path with
this module as ``xp`` where no GPU is present. Data lives in NumPy arrays on the host, but
NumPy cannot reach it implicitly: code that only works because NumPy quietly converts its
inputs fails here as it would on CuPy.

The rules it enforces, checked against CuPy's documentation ("Differences between CuPy and
NumPy", the ``cupy.ndarray`` reference) and CuPy's ``ndarray`` source (``_core/core.pyx``):

 1. Its arrays are their own type (``cupy_sim.ndarray``), not NumPy arrays or a subclass.
 2. No implicit conversion to NumPy: ``__array__`` raises ``TypeError("Implicit conversion
    to a NumPy array is not allowed. Please use `.get()` ...")``, CuPy's message, so
    ``np.asarray(x)``, ``np.array(x)``, ``np.testing.*``, ``float64(x)`` of a non-scalar,
    matplotlib and ``np.array([x, y])`` all fail. There is no ``__array_interface__``, no
    buffer protocol and no ``.ctypes``: the device memory is described only by
    ``__cuda_array_interface__`` (its pointer is the host buffer's address).
 3. Host copies are explicit: ``x.get()``, ``cupy_sim.asnumpy(x)``, ``x.tolist()``; single
    values through ``x.item()``, ``float(x)``, ``int(x)``, ``bool(x)`` (which CuPy allows, at
    the cost of a synchronisation).
 4. NumPy ufuncs called on its arrays (``np.exp(x)``) dispatch through ``__array_ufunc__`` to
    its ufunc of the same name, for plain calls only (no ``reduce``/``accumulate``/``at``), as
    CuPy's; a ufunc it lacks raises ``TypeError`` (NumPy: "operand type(s) all returned
    NotImplemented").
 5. NumPy functions called on its arrays (``np.sum(x)``) dispatch through
    ``__array_function__`` to its function of the same name and submodule, as CuPy's; one it
    lacks raises ``TypeError`` (NumPy: "no implementation found"). It has a subset of CuPy's
    functions (those course_lib and the tests use), never one CuPy lacks.
 6. Ufuncs and operators take device arrays and scalars (Python or NumPy scalars) only: a
    NumPy array or a list operand, in either position, is a ``TypeError`` ("Unsupported
    type"), as CuPy documents for its ufuncs. So is assigning one (``x[...] = np_array``).
 7. Reductions and integer indexing give 0-d device arrays, never NumPy scalars; there is no
    ``__index__``, so a device value cannot be a Python index or ``range`` bound.
 8. Numeric and boolean dtypes only (no object, string or datetime arrays).
 9. No floating-point ``RuntimeWarning`` s (overflow, divide by zero): CuPy computes on the
    device, outside NumPy's ``errstate``.
10. Memory: one pool (``get_default_memory_pool()``); each new array takes its size rounded
    up to 512 bytes, views share their base's block, the block returns to the pool when the
    last array using it is collected, and the pool keeps freed blocks (``total_bytes``)
    until ``free_all_blocks()``. ``cuda.MemoryHook`` subclasses registered with ``with``
    are called around each allocation and free with CuPy's keyword arguments.
11. ``cuda.runtime.getDeviceCount()``, ``cuda.Device().synchronize()``,
    ``cuda.Stream.null.synchronize()``, ``lib.stride_tricks.as_strided`` exist as in CuPy.

Where it is *looser* than CuPy (what a real GPU can still reveal, see the README's GPU
section): it computes synchronously, so missing synchronisations before timings go
unnoticed; results are NumPy's bit for bit (CuPy's reductions may round differently);
integer-array indices out of bounds raise here, but wrap around on CuPy; a cached pool block
is reused only for a request of exactly its rounded size (CuPy also splits larger blocks);
no kernel is compiled, so first-call compilation time does not exist here. Where it is
*stricter*: most of its functions refuse NumPy arrays outright, and indexing with a NumPy
array or a list is refused (CuPy transfers them).
"""
from numpy import (bool_, float16, float32, float64, int8, int16, int32, int64, uint8,  # noqa: F401
                   dtype, inf, nan, pi)

from . import cuda, lib
from ._core import IMPLICIT_CONVERSION_ERROR, ndarray
from ._memory import get_default_memory_pool
from ._routines import *  # noqa: F401,F403
from ._ufuncs import *  # noqa: F401,F403

newaxis = None
