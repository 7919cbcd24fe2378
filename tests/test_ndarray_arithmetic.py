"""NDArray arithmetic, reductions, matmul, dtypes and devices vs NumPy, and the errors they raise."""
import re

import numpy as np
import pytest

import course_lib
from course_lib import nd
from conftest import FLOAT_DTYPES, assert_close, cuda_device

BINARY = [
    ("add", lambda a, b: a + b),
    ("subtract", lambda a, b: a - b),
    ("multiply", lambda a, b: a * b),
    ("divide", lambda a, b: a / b),
    ("power", lambda a, b: a ** b),
    ("maximum", lambda a, b: a.maximum(b) if isinstance(a, nd.NDArray) else np.maximum(a, b)),
]

UNARY = [
    ("negate", lambda a: -a),
    ("add-scalar", lambda a: a + 1.5),
    ("radd-scalar", lambda a: 1.5 + a),
    ("rsub-scalar", lambda a: 2 - a),
    ("mul-scalar", lambda a: a * 3),
    ("rmul-scalar", lambda a: 0.5 * a),
    ("div-scalar", lambda a: a / 4),
    ("rdiv-scalar", lambda a: 2.0 / a),
    ("pow-scalar", lambda a: a ** 2),
    ("exp", lambda a: a.exp() if isinstance(a, nd.NDArray) else np.exp(a)),
    ("log", lambda a: a.log() if isinstance(a, nd.NDArray) else np.log(a)),
    ("tanh", lambda a: a.tanh() if isinstance(a, nd.NDArray) else np.tanh(a)),
    ("sqrt", lambda a: a.sqrt() if isinstance(a, nd.NDArray) else np.sqrt(a)),
    ("greater", lambda a: (a > 1.0) if isinstance(a, nd.NDArray) else (a > 1.0).astype(a.dtype)),
    ("maximum-scalar", lambda a: a.maximum(1.0) if isinstance(a, nd.NDArray) else np.maximum(a, 1.0)),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name, fn", BINARY, ids=[n for n, _ in BINARY])
def test_binary_ops_keep_dtype_and_match_numpy(device, rng, dtype, name, fn):
    x, y = rng.uniform(0.5, 2.0, (3, 4)).astype(dtype), rng.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    out = fn(nd.array(x, device=device), nd.array(y, device=device))
    assert out.dtype == dtype
    assert_close(out, fn(x, y), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name, fn", UNARY, ids=[n for n, _ in UNARY])
def test_scalar_and_unary_ops_keep_dtype_and_match_numpy(device, rng, dtype, name, fn):
    x = rng.uniform(0.5, 2.0, (3, 4)).astype(dtype)
    out = fn(nd.array(x, device=device))
    assert out.dtype == dtype
    assert_close(out, fn(x), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_arithmetic_on_non_compact_views(device, rng, dtype):
    x = rng.standard_normal((4, 6)).astype(dtype)
    a = nd.array(x, device=device)
    out = a.permute((1, 0))[::2, :] * a[::-1, 1::2].permute((1, 0)) + a[0:1, ::2].broadcast_to((4, 3)).permute((1, 0))
    expected = x.T[::2, :] * x[::-1, 1::2].T + np.broadcast_to(x[0:1, ::2], (4, 3)).T
    assert out.dtype == dtype
    assert_close(out, expected, dtype)


# ---------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("reduction", ["sum", "max"])
@pytest.mark.parametrize("axis", [None, 0, 2, -1, (0, 2), (-1, -3), (0, 1, 2), ()], ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(device, rng, reduction, axis, keepdims):
    x = rng.standard_normal((2, 3, 4))
    a = nd.array(x, device=device)
    out = getattr(a, reduction)(axis=axis, keepdims=keepdims)
    expected = getattr(np, reduction)(x, axis=axis, keepdims=keepdims)
    assert out.shape == expected.shape
    assert_close(out, expected)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int32"])
@pytest.mark.parametrize("axis", [0, 1, 2, 3, -1])
def test_argmax_is_numpys_first_maximum(device, rng, dtype, axis):
    # Few distinct values: many ties, where the FIRST maximum must win; -inf and NaN in places.
    x = rng.integers(-3, 3, size=(3, 4, 9, 5)).astype(dtype)
    if dtype.startswith("float"):
        x[0, 0, :, 0] = -np.inf
        x[1, 2, 3, 4] = np.nan
    out = nd.array(x, device=device, dtype=dtype).argmax(axis=axis)
    assert out.dtype == "int64"
    assert_close(out, np.argmax(x, axis=axis))
    finite = np.where(np.isnan(x), 0, x).astype(dtype)
    assert_close(nd.array(finite, device=device, dtype=dtype).argmax(axis=axis), np.argmax(finite, axis=axis))


def test_argmax_over_a_long_middle_axis(device, rng):
    x = rng.standard_normal((2, 300, 3))
    assert_close(nd.array(x, device=device).argmax(axis=1), np.argmax(x, axis=1))


@pytest.mark.parametrize("reduction", ["sum", "max"])
def test_reductions_of_a_permuted_view(device, rng, reduction):
    x = rng.standard_normal((2, 3, 4))
    out = getattr(nd.array(x, device=device).permute((2, 0, 1)), reduction)(axis=(0, 2), keepdims=True)
    assert_close(out, getattr(np, reduction)(np.transpose(x, (2, 0, 1)), axis=(0, 2), keepdims=True))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_reductions_keep_dtype(device, dtype):
    a = nd.array(np.ones((3, 4), dtype=dtype), device=device)
    assert a.sum(axis=0).dtype == dtype and a.max().dtype == dtype


@pytest.mark.parametrize("axis", [3, -4, (0, 0), (1, -2)], ids=str)
def test_reduction_over_a_bad_axis_raises(device, axis):
    with pytest.raises(ValueError):
        nd.array(np.ones((2, 3, 4)), device=device).sum(axis=axis)


# ---------------------------------------------------------------------------- matmul
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape_a, shape_b", [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((5, 1, 3, 4), (2, 4, 6)),
    ((2, 1, 3, 4), (1, 3, 4, 2)),
], ids=str)
def test_batched_matmul_broadcasts_batch_axes(device, rng, dtype, shape_a, shape_b):
    x, y = rng.standard_normal(shape_a).astype(dtype), rng.standard_normal(shape_b).astype(dtype)
    out = nd.array(x, device=device) @ nd.array(y, device=device)
    assert out.dtype == dtype
    assert_close(out, np.matmul(x.astype("float64"), y.astype("float64")), dtype)


@pytest.mark.parametrize("shape_a, shape_b", [((64, 288), (288, 32)), ((3, 40, 70), (70, 9)), ((5, 1), (1, 4))], ids=str)
def test_float16_matmul_is_numpys_float16_matmul_to_one_ulp(rng, shape_a, shape_b):
    """On the CPU course_lib multiplies float16 through float32 BLAS, rounding once: the same
    arithmetic as NumPy's own float16 loop (float32 sums), only faster. The float32 sums may be
    added in another order (BLAS kernels differ between CPUs; on some, 2 of 2048 entries then round
    the other way), so each entry is within one float16 ulp of NumPy's; summing in float16 would
    be several ulps off."""
    x = (rng.standard_normal(shape_a) * 3).astype("float16")
    y = (rng.standard_normal(shape_b) * 3).astype("float16")
    out = nd.array(x) @ nd.array(y)
    assert out.dtype == "float16"
    expected = np.matmul(x, y)
    ulp = np.spacing(np.abs(expected)).astype("float64")
    off = np.abs(out.numpy().astype("float64") - expected.astype("float64"))
    assert np.all(off <= ulp), f"{int((off > ulp).sum())} entries more than one float16 ulp from NumPy's"


def test_float16_matmul_needs_little_more_memory_than_its_output(rng):
    """The float32 copies are made a few rows at a time: 07 measures a float16 step's memory."""
    from course_lib.profiler import measure

    x = nd.array(rng.standard_normal((4096, 288)).astype("float16"))
    y = nd.array(rng.standard_normal((288, 16)).astype("float16"))
    with measure() as m:
        out = x @ y
    output_bytes = out.nbytes
    float32_kernel = 288 * 16 * 4
    assert m.peak_bytes <= output_bytes + float32_kernel + 2 * nd.FLOAT16_MATMUL_CHUNK_BYTES, m.peak_bytes
    assert m.peak_bytes < x.nbytes  # a float32 copy of x alone would be twice x


def test_float16_matmul_overflows_to_inf_as_float16_does():
    x = np.full((2, 4), 200.0, dtype="float16")          # each row sums to 4 * 200 * 200 = 160000 > 65504
    with np.errstate(over="ignore"):
        out = (nd.array(x) @ nd.array(x.T.copy())).numpy()
        assert np.isinf(out).all() and np.isinf(np.matmul(x, x.T)).all()


def test_matmul_of_transposed_views(device, rng):
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    out = nd.array(x, device=device).permute((1, 0)) @ nd.array(y, device=device).permute((1, 0))
    assert_close(out, x.T @ y.T)


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (5, 6)), ((2, 3, 4), (2, 5, 4)), ((4,), (4, 2))], ids=str)
def test_matmul_of_unaligned_shapes_raises_naming_them(device, shape_a, shape_b):
    a, b = nd.array(np.ones(shape_a), device=device), nd.array(np.ones(shape_b), device=device)
    with pytest.raises(ValueError, match=re.escape(str(shape_a))) as info:
        a @ b
    assert str(shape_b) in str(info.value)


def test_matmul_of_incompatible_batch_shapes_raises_naming_them(device):
    a, b = nd.array(np.ones((2, 3, 4)), device=device), nd.array(np.ones((3, 4, 5)), device=device)
    with pytest.raises(ValueError, match=re.escape("(2, 3, 4) and (3, 4, 5)")) as info:
        a @ b
    assert "(2,) and (3,)" in str(info.value)


# ---------------------------------------------------------------------------- dtypes and devices
@pytest.mark.parametrize("src, dst", [("float32", "float64"), ("float64", "float16"), ("float16", "float32"),
                                      ("float64", "int64"), ("float32", "float32")])
def test_astype(device, rng, src, dst):
    x = (rng.standard_normal((3, 4)) * 10).astype(src)
    a = nd.array(x, device=device)
    b = a.astype(dst)
    assert b.dtype == dst and b.shape == (3, 4)
    np.testing.assert_array_equal(b.numpy(), x.astype(dst))
    assert a.dtype == src, "astype must not change its input"


def test_astype_of_a_view(device):
    x = np.arange(12.0).reshape(3, 4)
    b = nd.array(x, device=device).permute((1, 0))[::-1].astype("float32")
    np.testing.assert_array_equal(b.numpy(), x.T[::-1].astype("float32"))


def test_unsupported_dtype_raises_type_error(device):
    with pytest.raises(TypeError, match="complex128"):
        nd.array(np.ones(3, dtype="complex128"), device=device)
    with pytest.raises(TypeError, match="int8"):
        nd.array(np.ones(3), device=device).astype("int8")


def test_to_device_round_trip(device, rng):
    x = rng.standard_normal((3, 4)).astype("float32")
    a = nd.array(x, device=course_lib.cpu())
    b = a.to(device)
    assert b.device == device and b.dtype == "float32"
    np.testing.assert_array_equal(b.numpy(), x)
    back = b.to(course_lib.cpu())
    assert back.device == course_lib.cpu()
    np.testing.assert_array_equal(back.numpy(), x)
    assert a.to(course_lib.cpu()) is a


def test_to_device_of_a_view(device):
    x = np.arange(12.0).reshape(3, 4)
    b = nd.array(x).permute((1, 0))[::2].to(device)
    np.testing.assert_array_equal(b.numpy(), x.T[::2])


# ---------------------------------------------------------------------------- mismatches
@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b,
                                lambda a, b: a / b, lambda a, b: a.maximum(b)],
                         ids=["add", "multiply", "subtract", "divide", "maximum"])
def test_mismatched_shapes_raise_naming_shapes(device, op):
    a, b = nd.array(np.ones((2, 3)), device=device), nd.array(np.ones((3, 2)), device=device)
    with pytest.raises(ValueError, match=re.escape("(2, 3)")) as info:
        op(a, b)
    assert "(3, 2)" in str(info.value)


@pytest.mark.parametrize("op", [lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a @ b],
                         ids=["add", "multiply", "matmul"])
def test_mismatched_dtypes_raise_naming_dtypes(device, op):
    a = nd.array(np.ones((2, 2), dtype="float32"), device=device)
    b = nd.array(np.ones((2, 2), dtype="float64"), device=device)
    with pytest.raises(TypeError, match="float32") as info:
        op(a, b)
    assert "float64" in str(info.value)


@pytest.mark.cuda
def test_mismatched_devices_raise():
    cuda = cuda_device()
    a, b = nd.array(np.ones(3), device=course_lib.cpu()), nd.array(np.ones(3), device=cuda)
    with pytest.raises(ValueError, match="cuda"):
        a + b
