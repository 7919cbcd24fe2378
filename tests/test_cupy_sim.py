"""The CuPy stand-in (tests/cupy_sim) is at least as strict as CuPy where NumPy code breaks.

Each test is one rule of the stand-in's docstring; each would fail if the stand-in let NumPy
reach its data implicitly, so a green run on cuda_sim means something.
"""
import warnings

import numpy as np
import pytest

import cupy_sim as xp
from cupy_sim.cuda import MemoryHook


@pytest.fixture
def x():
    return xp.asarray(np.arange(6.0).reshape(2, 3))


# ---------------------------------------------------------------------- 1-3: no implicit transfers
@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda a: np.array([a, a]), memoryview,
                                     lambda a: np.testing.assert_allclose(a, 0.0),
                                     lambda a: np.float64(a) + np.zeros(2)],
                         ids=["asarray", "array", "list-of-arrays", "buffer", "testing", "numpy-math"])
def test_nothing_converts_to_numpy_implicitly(x, convert):
    with pytest.raises(TypeError):
        convert(x)


def test_the_implicit_conversion_error_is_cupys(x):
    with pytest.raises(TypeError, match=r"Implicit conversion to a NumPy array is not allowed.*\.get\(\)"):
        np.asarray(x)


def test_no_host_memory_interfaces_only_the_cuda_one(x):
    assert not hasattr(x, "__array_interface__") and not hasattr(x, "ctypes")
    assert x.__cuda_array_interface__["shape"] == (2, 3)
    assert not isinstance(x, np.ndarray)


def test_explicit_copies_to_the_host(x):
    host = x.get()
    assert type(host) is np.ndarray and host.tolist() == [[0, 1, 2], [3, 4, 5]]
    host[0, 0] = 99  # a copy, not a view of the device data
    assert float(x[0, 0]) == 0.0
    assert type(xp.asnumpy(x)) is np.ndarray and x.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert x[1, 2].item() == 5.0 and int(x[1, 1]) == 4 and bool(x[0, 1])


def test_host_to_device_copies_are_explicit_and_independent():
    host = np.ones(3)
    device = xp.asarray(host)
    host[0] = 5.0
    assert device.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------------- 4-5: NumPy's dispatch
def test_numpy_ufuncs_and_functions_dispatch_to_the_stand_in(x):
    for result in (np.exp(x), np.maximum(x, 1.0), np.sum(x, axis=0), np.where(x > 2, x, 0.0)):
        assert isinstance(result, xp.ndarray)
    np.testing.assert_allclose(np.exp(x).get(), np.exp(x.get()))


@pytest.mark.parametrize("call", [lambda a: np.add.reduce(a), lambda a: np.add.accumulate(a),
                                  lambda a: np.arccosh(a), lambda a: np.linalg.norm(a),
                                  lambda a: np.median(a)],
                         ids=["ufunc.reduce", "ufunc.accumulate", "missing-ufunc", "linalg", "missing-function"])
def test_what_the_stand_in_does_not_implement_raises(x, call):
    with pytest.raises(TypeError):
        call(x)


# ---------------------------------------------------------------------- 6: operands
@pytest.mark.parametrize("mix", [lambda a: a + np.ones(3), lambda a: np.ones(3) * a, lambda a: a - [1.0, 2.0, 3.0],
                                 lambda a: xp.exp(np.ones(3)), lambda a: xp.exp([1.0]),
                                 lambda a: a.__setitem__((0,), np.zeros(3)), lambda a: xp.maximum(a, np.zeros(3))],
                         ids=["array+numpy", "numpy*array", "array-list", "ufunc(numpy)", "ufunc(list)",
                              "setitem-numpy", "maximum-numpy"])
def test_numpy_arrays_and_lists_are_not_operands(x, mix):
    with pytest.raises(TypeError):
        mix(x)


def test_python_and_numpy_scalars_are_operands(x):
    for result in (x * 2, 2.0 * x, np.float32(2) * x, x / np.float64(2.0), x ** 2, -x, x >= 1):
        assert isinstance(result, xp.ndarray) and result.shape == (2, 3)
    x[0, 0] = np.float64(7.0)
    assert float(x[0, 0]) == 7.0


# ---------------------------------------------------------------------- 7-9: values, dtypes, warnings
def test_reductions_and_integer_indices_give_device_arrays_not_numpy_scalars(x):
    for value in (x.sum(), x[1, 2], xp.argmax(x), x.max(axis=(0, 1)), next(iter(x[0]))):
        assert isinstance(value, xp.ndarray) and value.shape == ()
    with pytest.raises(TypeError):
        range(xp.argmax(x))  # no __index__: a device value is not a Python index


def test_only_numeric_and_boolean_dtypes():
    with pytest.raises(TypeError, match="Unsupported dtype"):
        xp.array(["a", "b"])
    with pytest.raises(TypeError, match="Unsupported dtype"):
        xp.array([object(), object()])


def test_no_floating_point_warnings_as_on_the_device():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        log_zero = xp.log(xp.zeros(2))                                   # divide by zero
        overflow = xp.asarray(np.array([6e4], dtype=np.float16)) * 10.0  # float16 overflow
    assert (log_zero.get() == -np.inf).all() and np.isinf(overflow.get()).all()


# ---------------------------------------------------------------------- 10: the memory pool
def test_the_pool_rounds_to_512_bytes_views_share_and_freed_blocks_stay_cached():
    pool = xp.get_default_memory_pool()
    pool.free_all_blocks()
    used, held = pool.used_bytes(), pool.total_bytes()
    a = xp.zeros(1000, dtype="float32")             # 4000 bytes -> 4096
    assert pool.used_bytes() - used == 4096
    views = [a[::2], a.reshape(10, 100).T, xp.lib.stride_tricks.as_strided(a, (10,), (4,))]
    assert pool.used_bytes() - used == 4096          # views take no memory
    del a
    assert pool.used_bytes() - used == 4096          # ... and keep their base alive
    del views
    assert pool.used_bytes() == used and pool.total_bytes() - held == 4096  # cached for reuse
    b = xp.ones(1024, dtype="float32")               # same rounded size: the cached block
    assert pool.total_bytes() - held == 4096
    del b
    pool.free_all_blocks()
    assert pool.total_bytes() == held


def test_memory_hooks_see_every_malloc_and_free_with_cupys_arguments():
    class Recorder(MemoryHook):
        name = "recorder"

        def __init__(self):
            self.events = []

        def malloc_postprocess(self, **kwargs):
            self.events.append(("malloc", kwargs["size"], kwargs["mem_size"]))

        def free_postprocess(self, **kwargs):
            self.events.append(("free", kwargs["mem_size"]))

    with Recorder() as hook:
        a = xp.empty(100, dtype="float64")
        b = a + 1.0
        del a, b
    assert hook.events == [("malloc", 800, 1024), ("malloc", 800, 1024), ("free", 1024), ("free", 1024)]


# ---------------------------------------------------------------------- 11: the CUDA calls course_lib makes
def test_device_calls_exist():
    assert xp.cuda.runtime.getDeviceCount() == 1
    xp.cuda.Device().synchronize()
    xp.cuda.Stream.null.synchronize()
    assert xp.cuda.runtime.getDeviceProperties(0)["name"].startswith(b"cupy_sim")
