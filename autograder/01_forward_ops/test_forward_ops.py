"""Hidden checks of 01_forward_ops: every compute on shapes and values the notebook never used."""
import re

import numpy as np
import pytest

from course_tools.grading.api import StudentError, expect_close, task

ELEMENTWISE = [
    ("forward_power_scalar", "PowerScalar", {"scalar": 3}, 1, lambda x: x ** 3),
    ("forward_power_scalar", "PowerScalar", {"scalar": -2}, 1, lambda x: x ** -2.0),
    ("forward_divide_scalar", "DivScalar", {"scalar": 2.5}, 1, lambda x: x / 2.5),
    ("forward_negate", "Negate", {}, 1, lambda x: -x),
    ("forward_log", "Log", {}, 1, np.log),
    ("forward_exp", "Exp", {}, 1, np.exp),
    ("forward_relu", "ReLU", {}, 1, lambda x: np.maximum(x, 0)),
    ("forward_divide", "EWiseDiv", {}, 2, lambda x, y: x / y),
    ("forward_power", "EWisePow", {}, 2, lambda x, y: x ** y),
]
POSITIVE_ONLY = {"Log", "EWisePow", "PowerScalar", "EWiseDiv"}


def defined_at_zero(op, attrs) -> bool:
    """Whether the op's first input may hold exact zeros (a^3, 0 / b, 0^b with b > 0; not log, a^-2)."""
    return op != "Log" and not (op == "PowerScalar" and attrs["scalar"] < 0)


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c[1]}{c[2] or ''}", marks=task(c[0])) for c in ELEMENTWISE])
@pytest.mark.parametrize("shape", [(7,), (3, 1, 5), ()])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_elementwise_op_on_unseen_shapes(student, rng, case, shape, dtype):
    """elementwise op on a vector, a 3-D array and a 0-d array, float64 and float32, with exact zeros where defined"""
    _, op, attrs, arity, reference = case
    arrays = [(rng.uniform(0.5, 2.0, shape) if op in POSITIVE_ONLY else rng.standard_normal(shape)).astype(dtype)
              for _ in range(arity)]
    if defined_at_zero(op, attrs) and shape:  # exact zeros and -0.0 where the op is defined there (ReLU outputs, padding)
        zeros = rng.random(shape) < 1 / 3
        zeros.flat[0] = True
        arrays[0][zeros] = np.where(rng.random(shape) < 0.5, 0.0, -0.0).astype(dtype)[zeros]
    expected = reference(*[a.astype("float64") for a in arrays])
    tol = 1e-12 if dtype == "float64" else 1e-5
    expect_close(student.forward(op, attrs, *arrays), expected, f"{op}({attrs}) on {shape} {dtype}",
                 rtol=tol, atol=tol, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# Elementwise edge cases: signs, zeros, integer and negative exponents, extreme ranges.

@task("forward_power_scalar", weight=2)
@pytest.mark.parametrize("p", [0, 1, 2, 3, -1, -3])
def test_power_scalar_negative_bases_and_integer_exponents(student, rng, p):
    """power_scalar with integer exponents (0, 1, negative) on bases of both signs"""
    a = rng.uniform(0.5, 2.0, (4, 3)) * rng.choice([-1.0, 1.0], (4, 3))
    expect_close(student.forward("PowerScalar", {"scalar": p}, a), a ** float(p),
                 f"PowerScalar({p}).compute on a (4, 3) array with negative entries", rtol=1e-12, dtype="float64")


@task("forward_power_scalar")
def test_power_scalar_keeps_float32(student, rng):
    """power_scalar of a float32 array keeps float32 (a Python number is a weak scalar)"""
    a = rng.uniform(0.5, 2.0, (2, 5)).astype(np.float32)
    expect_close(student.forward("PowerScalar", {"scalar": 2}, a), a.astype(np.float64) ** 2,
                 "PowerScalar(2).compute on float32 (2, 5)", rtol=1e-5, dtype="float32")


@task("forward_divide_scalar", weight=2)
@pytest.mark.parametrize("c", [2, -4, 0.1, 7.5])
def test_divide_scalar_is_true_division(student, rng, c):
    """divide_scalar is true division, also by an integer and by a negative number"""
    a = rng.integers(-9, 10, (3, 4)).astype(np.float64) + rng.choice([0.0, 0.5], (3, 4))
    expect_close(student.forward("DivScalar", {"scalar": c}, a), a / c, f"DivScalar({c}).compute on (3, 4)",
                 rtol=1e-12, atol=1e-12, dtype="float64")


@task("forward_divide_scalar")
def test_divide_scalar_keeps_float32(student, rng):
    """divide_scalar of a float32 array by an int keeps float32"""
    a = rng.standard_normal((3, 2, 2)).astype(np.float32)
    expect_close(student.forward("DivScalar", {"scalar": 3}, a), a.astype(np.float64) / 3,
                 "DivScalar(3).compute on float32 (3, 2, 2)", rtol=1e-6, atol=1e-7, dtype="float32")


@task("forward_negate", weight=2)
def test_negate_of_zeros_and_large_values(student, rng):
    """negate of a 4-D array with zeros and large values"""
    a = rng.standard_normal((2, 1, 3, 2)) * 1e6
    a[0, 0, 0] = 0.0
    expect_close(student.forward("Negate", {}, a), -a, "Negate.compute on (2, 1, 3, 2)", rtol=0, atol=0,
                 dtype="float64")


@task("forward_divide", weight=2)
def test_divide_with_negative_denominators(student, rng):
    """divide by denominators of both signs, on a 4-D array"""
    a = rng.standard_normal((2, 3, 1, 4))
    b = rng.uniform(0.25, 3.0, (2, 3, 1, 4)) * rng.choice([-1.0, 1.0], (2, 3, 1, 4))
    expect_close(student.forward("EWiseDiv", {}, a, b), a / b, "EWiseDiv.compute on (2, 3, 1, 4)",
                 rtol=1e-12, dtype="float64")


@task("forward_divide")
def test_divide_order_of_operands(student):
    """divide computes a / b, not b / a"""
    a, b = np.array([[6.0, 1.0], [-8.0, 9.0]]), np.array([[3.0, 4.0], [2.0, -0.5]])
    expect_close(student.forward("EWiseDiv", {}, a, b), a / b, "EWiseDiv.compute(a, b) on (2, 2)", rtol=1e-12)


@task("forward_power", weight=2)
def test_power_with_zero_negative_and_fractional_exponents(student, rng):
    """power with exponents that are zero, negative and fractional"""
    a = rng.uniform(0.1, 4.0, (3, 5))
    b = np.array([0.0, -1.0, 0.5, 2.0, -2.5])[None, :].repeat(3, axis=0) + rng.uniform(-0.1, 0.1, (3, 5)) * [0, 0, 1, 1, 1]
    expect_close(student.forward("EWisePow", {}, a, b), a ** b, "EWisePow.compute on (3, 5)", rtol=1e-12,
                 dtype="float64")


@task("forward_power")
def test_power_order_of_operands(student):
    """power computes a ** b, not b ** a"""
    a, b = np.array([2.0, 3.0, 0.5]), np.array([3.0, 0.5, 4.0])
    expect_close(student.forward("EWisePow", {}, a, b), a ** b, "EWisePow.compute(a, b) on (3,)", rtol=1e-12)


@task("forward_log", weight=2)
def test_log_over_many_orders_of_magnitude(student):
    """log of values from 1e-300 to 1e300 (and of exactly 1)"""
    a = np.array([1e-300, 1e-8, 0.5, 1.0, 2.0, 1e8, 1e300]).reshape(7, 1)
    expect_close(student.forward("Log", {}, a), np.log(a), "Log.compute on (7, 1)", rtol=1e-12, atol=1e-12,
                 dtype="float64")


@task("forward_log")
def test_log_keeps_float32(student, rng):
    """log of a float32 array keeps float32"""
    a = rng.uniform(0.01, 50.0, (4, 4)).astype(np.float32)
    expect_close(student.forward("Log", {}, a), np.log(a.astype(np.float64)), "Log.compute on float32 (4, 4)",
                 rtol=1e-5, atol=1e-6, dtype="float32")


@task("forward_exp", weight=2)
def test_exp_over_a_wide_range(student):
    """exp of values from -700 to 700 in float64"""
    a = np.linspace(-700.0, 700.0, 15).reshape(3, 5)
    expect_close(student.forward("Exp", {}, a), np.exp(a), "Exp.compute on (3, 5), values in [-700, 700]",
                 rtol=1e-12, atol=0, dtype="float64")


@task("forward_exp")
def test_exp_keeps_float32(student, rng):
    """exp of a float32 array keeps float32"""
    a = rng.uniform(-80.0, 80.0, (2, 6)).astype(np.float32)
    expect_close(student.forward("Exp", {}, a), np.exp(a.astype(np.float64)), "Exp.compute on float32 (2, 6)",
                 rtol=1e-5, atol=0, dtype="float32")


@task("forward_relu")
def test_relu_keeps_float16_at_its_extremes(student):
    """relu of float16 at the ends of its range (40000, 65504, +-inf, subnormals): float16, no overflow, no NaN"""
    a = np.array([40000.0, -40000.0, 65504.0, -65504.0, np.inf, -np.inf, 0.0, -0.0, 6e-8, -6e-8], dtype=np.float16)
    expect_close(student.forward("ReLU", {}, a), np.maximum(a, np.float16(0)), "ReLU.compute on float16 extremes",
                 rtol=0, atol=0, dtype="float16")


@task("forward_relu", weight=2)
def test_relu_at_zero_and_on_all_negative_input(student, rng):
    """relu of exact zeros, of an all-negative array and of a mixed 3-D array"""
    zeros = np.array([0.0, -0.0, 0.0, 1e-300, -1e-300])
    expect_close(student.forward("ReLU", {}, zeros), np.maximum(zeros, 0), "ReLU.compute at (almost) zero",
                 rtol=0, atol=0)
    neg = -rng.uniform(0.1, 3.0, (3, 4))
    expect_close(student.forward("ReLU", {}, neg), np.zeros((3, 4)), "ReLU.compute of an all-negative (3, 4)",
                 rtol=0, atol=0)
    mixed = rng.standard_normal((2, 5, 3))
    expect_close(student.forward("ReLU", {}, mixed), np.maximum(mixed, 0), "ReLU.compute on (2, 5, 3)",
                 rtol=0, atol=0, dtype="float64")


# ---------------------------------------------------------------------------------------------
# reshape

RESHAPES = [
    ((2, 3, 4), (6, 4)), ((2, 3, 4), (4, 3, 2)), ((2, 3, 4), (-1,)), ((2, 3, 4), (3, -1, 2)),
    ((12,), (2, 2, 3)), ((5, 1), (1, 5)), ((1, 1, 6), (6,)), ((3, 4, 5), (5, 12)),
    ((2, 3), (1, 2, 1, 3, 1)),
]


@task("forward_reshape", weight=1)
@pytest.mark.parametrize("src,dst", RESHAPES, ids=[f"{s}->{d}" for s, d in RESHAPES])
def test_reshape_keeps_row_major_order(student, rng, src, dst):
    """reshape to a new shape (with -1, size-1 axes, more and fewer axes) keeps row-major order"""
    a = rng.standard_normal(src)
    expect_close(student.forward("Reshape", {"shape": dst}, a), a.reshape(dst), f"Reshape({dst}).compute of {src}",
                 rtol=0, atol=0, dtype="float64")


@task("forward_reshape", weight=2)
def test_reshape_to_and_from_zero_dimensions(student):
    """reshape between a 0-d array and one element with size-1 axes"""
    expect_close(student.forward("Reshape", {"shape": ()}, np.array([[2.5]])), np.array(2.5),
                 "Reshape(()).compute of (1, 1)", rtol=0, atol=0)
    expect_close(student.forward("Reshape", {"shape": (1, 1, 1)}, np.array(-1.5)), np.full((1, 1, 1), -1.5),
                 "Reshape((1, 1, 1)).compute of a 0-d array", rtol=0, atol=0)


@task("forward_reshape")
def test_reshape_keeps_float32(student, rng):
    """reshape of a float32 array keeps float32"""
    a = rng.standard_normal((4, 6)).astype(np.float32)
    expect_close(student.forward("Reshape", {"shape": (2, 12)}, a), a.reshape(2, 12),
                 "Reshape((2, 12)).compute of float32 (4, 6)", rtol=0, atol=0, dtype="float32")


# ---------------------------------------------------------------------------------------------
# broadcast_to

BROADCASTS = [
    ((5,), (3, 5), "one axis prepended"),
    ((4, 1), (4, 6), "size-1 axis stretched"),
    ((1, 3), (2, 5, 3), "prepended axis and a size-1 axis"),
    ((2, 1, 3), (4, 2, 5, 3), "prepended axis and a middle size-1 axis"),
    ((1,), (3, 2, 2), "two prepended axes and a size-1 axis"),
    ((1, 1), (3, 4), "both axes size 1"),
    ((), (2, 3), "a 0-d array"),
    ((3, 1, 1), (3, 2, 4), "two trailing size-1 axes"),
    ((2, 3), (2, 3), "the same shape"),
    ((1, 4), (1, 4), "a size-1 axis that stays 1"),
]


@task("forward_broadcast_to")
@pytest.mark.parametrize("src,dst,what", BROADCASTS, ids=[b[2].replace(" ", "_") for b in BROADCASTS])
def test_broadcast_to_unseen_shapes(student, rng, src, dst, what):
    """broadcast_to with prepended axes, stretched size-1 axes, a 0-d input and unchanged shapes"""
    a = rng.standard_normal(src)
    expect_close(student.forward("BroadcastTo", {"shape": dst}, a), np.broadcast_to(a, dst),
                 f"BroadcastTo({dst}).compute of {src} ({what})", rtol=0, atol=0, dtype="float64")


@task("forward_broadcast_to", weight=2)
def test_broadcast_to_copies_each_row_not_each_column(student):
    """broadcast_to (4,) -> (3, 4) repeats the vector as ROWS (axes are aligned from the right)"""
    a = np.array([1.0, 2.0, 3.0, 4.0])
    expect_close(student.forward("BroadcastTo", {"shape": (3, 4)}, a), np.broadcast_to(a, (3, 4)),
                 "BroadcastTo((3, 4)).compute of (4,)", rtol=0, atol=0)


@task("forward_broadcast_to")
def test_broadcast_to_keeps_float32(student, rng):
    """broadcast_to of a float32 array keeps float32"""
    a = rng.standard_normal((3, 1)).astype(np.float32)
    expect_close(student.forward("BroadcastTo", {"shape": (2, 3, 3)}, a), np.broadcast_to(a, (2, 3, 3)),
                 "BroadcastTo((2, 3, 3)).compute of float32 (3, 1)", rtol=0, atol=0, dtype="float32")


@task("forward_broadcast_to", weight=2)
@pytest.mark.parametrize("src,dst", [((3, 1), (3, 4)), ((4,), (2, 4)), ((), (2, 2)), ((1, 2, 1), (3, 2, 2))],
                         ids=["column", "row", "0-d", "middle"])
def test_broadcast_to_returns_a_compact_array(student, rng, src, dst):
    """broadcast_to returns a compact array (row-major strides, offset 0), as its contract says, not a stride-0 view"""
    a = rng.standard_normal(src)
    got = student.forward_view("BroadcastTo", {"shape": dst}, a)
    expect_close(got["values"], np.broadcast_to(a, dst), f"BroadcastTo({dst}).compute of {src}", rtol=0, atol=0)
    if not got["compact"]:
        raise AssertionError(f"BroadcastTo({dst}).compute of {src}: the values are right, but the result is a view "
                             f"(strides {tuple(got['strides'])}, offset {got['offset']}), not a compact array: the "
                             f"later ops read its buffer in row-major order; return .compact()")


# ---------------------------------------------------------------------------------------------
# summation

SUMS = [
    ((3, 4, 5), None), ((3, 4, 5), 0), ((3, 4, 5), 2), ((3, 4, 5), -1), ((3, 4, 5), -3),
    ((3, 4, 5), (0, 1)), ((3, 4, 5), (2, 0)), ((3, 4, 5), (-1, -2)), ((3, 4, 5), (0, 1, 2)),
    ((2, 3, 4, 5), (1, 3)), ((2, 3, 4, 5), (-4, 2)), ((1, 6, 1), (0, 2)), ((7,), None), ((7,), 0),
]


@task("forward_summation")
@pytest.mark.parametrize("shape,axes", SUMS, ids=[f"{s}-{a}" for s, a in SUMS])
def test_summation_over_axes(student, rng, shape, axes):
    """summation over None, an int, a negative int and tuples of axes (unsorted, negative), removing them"""
    a = rng.standard_normal(shape)
    np_axes = tuple(axes) if isinstance(axes, tuple) else axes
    expect_close(student.forward("Summation", {"axes": axes}, a), np.sum(a, axis=np_axes),
                 f"Summation(axes={axes}).compute of {shape}", rtol=1e-10, atol=1e-12, dtype="float64")


@task("forward_summation", weight=2)
def test_summation_of_everything_is_zero_dimensional(student, rng):
    """summation with axes=None gives a 0-d array (shape ()), not shape (1,)"""
    a = rng.standard_normal((2, 3))
    out = student.forward("Summation", {"axes": None}, a)
    assert np.shape(out) == (), f"Summation(axes=None).compute of (2, 3): result has shape {np.shape(out)}, expected ()"
    expect_close(out, np.sum(a), "Summation(axes=None).compute of (2, 3)", rtol=1e-12)


@task("forward_summation")
def test_summation_keeps_float32(student, rng):
    """summation of a float32 array keeps float32"""
    a = rng.standard_normal((4, 3, 2)).astype(np.float32)
    expect_close(student.forward("Summation", {"axes": (0, 2)}, a), a.astype(np.float64).sum(axis=(0, 2)),
                 "Summation(axes=(0, 2)).compute of float32 (4, 3, 2)", rtol=1e-5, atol=1e-5, dtype="float32")


# ---------------------------------------------------------------------------------------------
# transpose

TRANSPOSES = [
    ((5, 2), None), ((2, 5, 3), None), ((2, 3, 4, 5), None), ((3, 1, 4), None),
    ((2, 5, 3), (0, 1)), ((2, 5, 3), (2, 0)), ((2, 3, 4, 5), (1, 3)), ((2, 3, 4, 5), (0, 2)),
    ((2, 3, 4, 5), (-1, -4)), ((2, 3, 4, 5), (3, 2)), ((4, 3), (1, 0)),
]


@task("forward_transpose")
@pytest.mark.parametrize("shape,axes", TRANSPOSES, ids=[f"{s}-{a}" for s, a in TRANSPOSES])
def test_transpose_swaps_exactly_two_axes(student, rng, shape, axes):
    """transpose swaps two axes: the last two by default, or the two given ones"""
    a = rng.standard_normal(shape)
    expected = np.swapaxes(a, -1, -2) if axes is None else np.swapaxes(a, *axes)
    expect_close(student.forward("Transpose", {"axes": axes}, a), expected,
                 f"Transpose(axes={axes}).compute of {shape}", rtol=0, atol=0, dtype="float64")


@task("forward_transpose", weight=3)
def test_default_transpose_of_a_batch_is_not_a_full_reversal(student, rng):
    """default transpose of (2, 3, 4) is (2, 4, 3): only the last two axes swap (not NumPy's .T)"""
    a = rng.standard_normal((2, 3, 4))
    out = student.forward("Transpose", {"axes": None}, a)
    assert np.shape(out) == (2, 4, 3), (f"Transpose().compute of (2, 3, 4): shape {np.shape(out)}, expected "
                                        f"(2, 4, 3) (swap only the last two axes)")
    expect_close(out, np.swapaxes(a, -1, -2), "Transpose().compute of (2, 3, 4)", rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# transpose_permutation: the order of axes Transpose hands to NDArray.permute, on dimensions and
# pairs the notebook did not use. Arguments cross as JSON, so a pair arrives as a list, and the
# order comes back as one.

def numpy_order(axes, ndim: int) -> list[int]:
    """NumPy's answer: where np.swapaxes sends each axis of an array whose sizes 2, 3, 4, ... tell its axes apart."""
    probe = np.broadcast_to(0.0, tuple(range(2, ndim + 2)))
    return [n - 2 for n in np.swapaxes(probe, *((-2, -1) if axes is None else axes)).shape]


def expect_order(student, axes, ndim: int) -> None:
    got = student.call("course_lib.ops.shaping:transpose_permutation", axes=axes, ndim=ndim)
    expected = numpy_order(axes, ndim)
    what = f"transpose_permutation({None if axes is None else tuple(axes)}, {ndim})"
    if not isinstance(got, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in got):
        raise AssertionError(f"{what} returned {got!r}: expected a tuple of ints, {tuple(expected)}")
    if got != expected:
        raise AssertionError(f"{what} returned {tuple(got)}, expected {tuple(expected)}")


def refusal(student, axes, ndim: int) -> str:
    """The message of the ValueError transpose_permutation raises (AssertionError if it raises none)."""
    what = f"transpose_permutation({None if axes is None else tuple(axes)}, {ndim})"
    try:
        got = student.call("course_lib.ops.shaping:transpose_permutation", axes=axes, ndim=ndim)
    except StudentError as err:
        raised, _, message = str(err).partition(":")
        if raised != "ValueError":
            raise AssertionError(f"{what} raised {raised}, expected ValueError") from None
        return message.strip()
    raise AssertionError(f"{what} returned {got!r}, expected ValueError (not a swap of two axes)")


@task("transpose_permutation", weight=3)
@pytest.mark.parametrize("ndim", [2, 3, 5, 6])
def test_transpose_permutation_default_swaps_the_last_two(student, ndim):
    """with axes=None the order swaps the last two axes and keeps every other one in place"""
    expect_order(student, None, ndim)


@task("transpose_permutation")
@pytest.mark.parametrize("axes,ndim", [([0, 3], 5), ([2, 1], 4), ([1, 0], 2), ([4, 2], 6)])
def test_transpose_permutation_swaps_the_given_pair(student, axes, ndim):
    """a given pair (i, j), in either order, swaps those two axes only"""
    expect_order(student, axes, ndim)


@task("transpose_permutation")
@pytest.mark.parametrize("axes,ndim", [([-1, 0], 4), ([-3, -1], 5), ([2, -4], 5), ([-6, -2], 6)])
def test_transpose_permutation_counts_negative_axes_from_the_end(student, axes, ndim):
    """negative axes count from the end: (-1, 0) of a 4-D array swaps axes 3 and 0"""
    expect_order(student, axes, ndim)


@task("transpose_permutation", weight=0.5)
@pytest.mark.parametrize("axes,ndim", [
    (None, 1), (None, 0), ([0, 4], 4), ([-5, 1], 4), ([2, 2], 3), ([1, -3], 4), ([3, -2], 5), ([0], 3),
    ([0, 1, 2], 4),
])
def test_transpose_permutation_refuses_what_is_not_a_swap(student, axes, ndim):
    """ValueError for fewer than 2 dimensions, an axis out of range, one axis twice (also as a negative) or not a pair"""
    refusal(student, axes, ndim)


@task("transpose_permutation", weight=0.5)
@pytest.mark.parametrize("axes,ndim", [([1, 5], 3), ([0, -5], 4), ([2, -1], 3), ([3, 1, 0], 5), ([4], 6)])
def test_transpose_permutation_error_names_the_axes_and_ndim(student, axes, ndim):
    """the ValueError's message names every axis it was given and the number of dimensions"""
    message = refusal(student, axes, ndim)
    named = {int(n) for n in re.findall(r"-?\d+", message)}
    missing = [n for n in [*axes, ndim] if n not in named]
    if missing:
        raise AssertionError(f"transpose_permutation({tuple(axes)}, {ndim}) raised ValueError({message!r}): the "
                             f"message should name the axes it got and ndim; {missing} not in it")


# ---------------------------------------------------------------------------------------------
# matmul

MATMULS = [
    ((4, 3), (3, 5)), ((1, 6), (6, 1)), ((6, 1), (1, 6)), ((3, 2, 4), (3, 4, 5)), ((3, 2, 4), (4, 5)),
    ((2, 4), (3, 4, 5)), ((3, 1, 2, 4), (5, 4, 3)), ((1, 2, 4), (3, 4, 2)), ((2, 1, 3, 4), (1, 5, 4, 2)),
    ((2, 2, 3, 1), (1, 2)),
]


@task("forward_matmul")
@pytest.mark.parametrize("sa,sb", MATMULS, ids=[f"{a}@{b}" for a, b in MATMULS])
def test_matmul_with_broadcast_batch_axes(student, rng, sa, sb):
    """matmul of matrices, batches, and batches whose axes broadcast (prepended or size 1)"""
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    expect_close(student.forward("MatMul", {}, a, b), np.matmul(a, b), f"MatMul.compute of {sa} @ {sb}",
                 rtol=1e-10, atol=1e-12, dtype="float64")


@task("forward_matmul", weight=2)
def test_matmul_is_not_elementwise(student):
    """matmul of two square matrices is the matrix product, in the right order"""
    a, b = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0.0, 1.0], [5.0, -1.0]])
    expect_close(student.forward("MatMul", {}, a, b), a @ b, "MatMul.compute of (2, 2) @ (2, 2)", rtol=1e-12)


@task("forward_matmul")
def test_matmul_keeps_float32(student, rng):
    """matmul of float32 batches keeps float32"""
    a, b = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    expect_close(student.forward("MatMul", {}, a, b), a.astype(np.float64) @ b.astype(np.float64),
                 "MatMul.compute of float32 (2, 3, 4) @ (4, 2)", rtol=1e-5, atol=1e-5, dtype="float32")


# ---------------------------------------------------------------------------------------------
# normalize_axes: every form an axes argument takes, on dimensions the notebook did not use, and
# the errors. Arguments cross as JSON, so a tuple arrives as a list (a sequence of ints all the same).

@task("normalize_axes", weight=2)
@pytest.mark.parametrize("axis,ndim,expected", [
    (None, 4, [0, 1, 2, 3]), (None, 0, []), (2, 4, [2]), (-1, 4, [3]), (-5, 5, [0]), ([3, 1], 4, [1, 3]),
    ([-1, -2], 4, [2, 3]), ([0, -1, 2], 5, [0, 2, 4]), ([4, -5, 2], 6, [1, 2, 4]), ([], 2, []), ([-1], 1, [0]),
])
def test_normalize_axes_reads_every_form(student, axis, ndim, expected):
    """normalize_axes of None, ints, negative ints and unsorted sequences of axes, on unseen dimensions"""
    got = student.call("course_lib.nd:normalize_axes", axis=axis, ndim=ndim)
    what = f"normalize_axes({axis!r}, {ndim})"
    if not isinstance(got, list) or not all(isinstance(a, int) and not isinstance(a, bool) for a in got):
        raise AssertionError(f"{what} returned {got!r}: expected a tuple of ints, {tuple(expected)}")
    if got != expected:
        raise AssertionError(f"{what} returned {tuple(got)}, expected {tuple(expected)} (sorted, each in 0..{ndim - 1})")


@task("normalize_axes", weight=2)
@pytest.mark.parametrize("axis,ndim,kind", [
    (4, 4, "ValueError"), (-5, 4, "ValueError"), ([0, 4], 4, "ValueError"), ([1, -3], 4, "ValueError"),
    ([2, 2], 3, "ValueError"), (0, 0, "ValueError"), (1.5, 3, "TypeError"), (True, 3, "TypeError"),
    ([0, None], 3, "TypeError"), ([0, 1.0], 2, "TypeError"), ([False], 2, "TypeError"),
])
def test_normalize_axes_refuses_bad_axes(student, axis, ndim, kind):
    """normalize_axes raises ValueError for an axis out of range or repeated, TypeError for one that is not an int"""
    what = f"normalize_axes({axis!r}, {ndim})"
    try:
        got = student.call("course_lib.nd:normalize_axes", axis=axis, ndim=ndim)
    except StudentError as err:
        raised = str(err).split(":", 1)[0]
        if raised != kind:
            raise AssertionError(f"{what} raised {raised}, expected {kind}") from None
        return
    raise AssertionError(f"{what} returned {got!r}, expected {kind}")
