"""Hidden checks of 06_gradient_checking: central_difference, the step-size sweep and the
planted-bug checks, on inputs the notebook never used.

central_difference takes a Python function, which cannot cross into the worker. It is checked
  * on course_lib ops reached by name (the numerical_gradient scenario runs the student's
    central_difference on x -> sum(op(x) * projection)), against autograd's gradients computed
    here by the reference course_lib;
  * through `numeric`, the numerical gradient the notebook's section 5 computed (float32 loss,
    h = 1e-4, every probe deterministic), recomputed here with the reference central_difference;
  * through the central_difference_of scenario (a catalogue of functions in the worker).
The planted bugs (planted_bugs.py, beside this file) and the correct implementations the checks
must accept run here, in the grader: the student's checks receive them as functions that call
back into the grader, all alike and in an order drawn for each grading, so a check can only tell
them apart by what they compute.

PYTEST_DONT_REWRITE (failure messages are the assertions' own text, shown to the student)
"""
import importlib
from pathlib import Path
import random

import numpy as np
import pytest

from course_lib import nd, ops
from course_lib.autograd import Tensor
from course_lib.gradcheck import central_difference as reference_central_difference
from course_lib.gradcheck import rel_error
from course_lib.naive import conv2d_backward as naive_conv2d_backward
from course_tools.grading.api import (StudentError, as_array, as_list, as_mapping, as_numbers, assignment_module,
                                      expect_close, task)

planted_bugs = assignment_module("06_gradient_checking", "planted_bugs", Path(__file__).parent)


# ----------------------------------------------------------------------------------- gradient_check
def gradient_check_of(student, function, *arrays, h=1e-6, tol=1e-6):
    """The student's central_difference (h = 1e-6) of each input of ``function``, against autograd's
    gradient computed here: None when every input agrees to ``tol`` (rel_error), else why not."""
    module, _, name = function.partition(":")
    fn = getattr(importlib.import_module(module), name)
    values = [np.array(a, dtype=np.float64) for a in arrays]
    tensors = [Tensor(v, dtype="float64") for v in values]
    out = fn(*tensors)
    projection = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(Tensor(projection, dtype="float64", requires_grad=False))
    numeric = as_list(student.request("numerical_gradient", function, values, projection, h, what="central_difference"),
                      "central_difference (one gradient per input)", len(values))
    for i, (got, t) in enumerate(zip(numeric, tensors)):
        got = as_array(got, f"central_difference of input {i}", dtype_kind="iuf")
        if got.shape != values[i].shape:
            return f"for input {i} it returned shape {got.shape}, expected shape {values[i].shape}"
        error = rel_error(got, t.grad.numpy())
        if not error <= tol:
            return f"for input {i} (shape {values[i].shape}) it is off by rel_error {error:.2e} (more than {tol:g})"
    return None


def _logsumexp(rng):
    return [2.0 * rng.standard_normal((3, 5))]


def _matmul(rng):
    return [rng.standard_normal((4, 3)), rng.standard_normal((3, 2))]


def _softmax_loss(rng):
    return [2.0 * rng.standard_normal((4, 6)), np.eye(6)[rng.integers(0, 6, 4)]]


def _conv(rng):  # NHWC input, (KH, KW, C_in, C_out) kernel, stride 1, no padding
    return [rng.standard_normal((2, 4, 5, 2)), rng.standard_normal((3, 2, 2, 3))]


def _tanh(rng):
    return [rng.standard_normal((2, 3, 2))]


def _divide_small(rng):  # large curvature: a one-sided difference is off by about 1e-5
    return [rng.standard_normal((2, 3)), rng.uniform(0.1, 0.2, (2, 3)) * rng.choice([-1, 1], (2, 3))]


def _log_small(rng):
    return [rng.uniform(0.04, 0.2, (3, 3))]


GRADIENT_CHECK_CASES = [
    ("course_lib.ops:logsumexp", _logsumexp, "logsumexp of a (3, 5) array (every element interacts)", 1),
    ("course_lib.ops:matmul", _matmul, "matmul of (4, 3) and (3, 2) arrays (two arguments)", 1),
    ("course_lib.nn:softmax_loss", _softmax_loss, "softmax_loss of (4, 6) logits and one-hot targets", 1),
    ("course_lib.ops:conv", _conv, "conv of a (2, 4, 5, 2) input with a (3, 2, 2, 3) kernel", 1),
    ("course_lib.ops:tanh", _tanh, "tanh of a (2, 3, 2) array", 1),
    ("course_lib.ops:divide", _divide_small, "a / b with |b| in [0.1, 0.2] (strongly curved: needs a "
                                             "central, second-order difference)", 2),
    ("course_lib.ops:log", _log_small, "log(a) with a in [0.04, 0.2] (strongly curved: needs a central, "
                                       "second-order difference)", 2),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c[0].split(":")[1], marks=task("gradient_check", weight=c[3]))
                                  for c in GRADIENT_CHECK_CASES])
def test_gradient_check_accepts_correct_gradients(student, rng, case):
    """your central_difference agrees with autograd's correct gradients of course_lib ops"""
    function, draw, what, _ = case
    problem = gradient_check_of(student, function, *draw(rng))
    assert problem is None, (
        f"your central_difference (with h = 1e-6) does not agree with autograd's correct gradient of {what}: {problem}")


# The float32 comparison of section 5 (cell float32_vs_float64): the notebook's last probe there
# is central_difference(loss, w, 1e-4) in float32; it leaves its result in `numeric`.
def _conv_forward(a, w, b, padding=0, stride=1):
    """The notebook's locked conv_forward (NCHW cross-correlation on the unpadded input)."""
    p, s = padding, stride
    a_pad = np.pad(a, ((0, 0), (0, 0), (p, p), (p, p)))
    n, c_in, hp, wp = a_pad.shape
    c_out, _, kh, kw = w.shape
    h_out, w_out = (hp - kh) // s + 1, (wp - kw) // s + 1
    z = np.zeros((n, c_out, h_out, w_out), dtype=np.result_type(a, w)) + b.reshape(1, -1, 1, 1)
    for u in range(kh):
        for v in range(kw):
            patch = a_pad[:, :, u:u + s * (h_out - 1) + 1:s, v:v + s * (w_out - 1) + 1:s]
            z += np.einsum("icrs,qc->iqrs", patch, w[:, :, u, v])
    return z


def _section5_numeric():
    rng = np.random.default_rng(2)
    a, w, b = rng.standard_normal((2, 3, 6, 5)), 0.5 * rng.standard_normal((4, 3, 3, 3)), rng.standard_normal(4)
    p, s = 1, 2
    g = rng.standard_normal(_conv_forward(a, w, b, p, s).shape)
    f32 = np.float32

    def loss(v):
        return float(np.sum(np.tanh(_conv_forward(a.astype(f32), v.astype(f32), b.astype(f32), p, s)) * g.astype(f32)))

    return reference_central_difference(loss, w, 1e-4)


@task("gradient_check", weight=3)
def test_section5_float32_probe_matches_the_reference(student):
    """central_difference in section 5 (float32 loss through tanh, h = 1e-4): every probe as specified"""
    got = student.variable("numeric")
    assert isinstance(got, np.ndarray), f"`numeric` (section 5) should be a NumPy array, got {type(got).__name__}"
    # Every probe is deterministic (the same float64 points, the same float32 losses), so a correct
    # central_difference reproduces the reference to rounding; a probe taken at a shifted point
    # (an element not put back), a one-sided difference or a wrong divisor changes it by ~1e-2.
    expect_close(got, _section5_numeric(),
                 "central_difference of section 5's float32 loss at the (4, 3, 3, 3) kernel w with h = 1e-4 "
                 "(each element probed at w +- h, then put back)", rtol=1e-7, atol=1e-7, dtype="float64")


def central_difference_of(student, function, x, h, dtype=np.float64):
    """{"grad": the student's central_difference of the catalogue ``function`` at x, "x_after": x after the
    call}; x reaches central_difference as an array of ``dtype`` (the caller's, as in the notebook)."""
    what = f"central_difference of {function}"
    out = as_mapping(student.request("central_difference_of", function, np.asarray(x, dtype=dtype), float(h)),
                     what, ("grad", "x_after"))
    return {"grad": as_array(out["grad"], what, dtype_kind="iuf"),
            "x_after": as_array(out["x_after"], f"{what}: x after the call")}


@pytest.mark.parametrize("case", [
    pytest.param(("sum_of_cubes", (2, 3, 2), 1e-5), id="cubes-3d", marks=task("gradient_check", weight=1)),
    pytest.param(("sin_dot", (7,), 1e-6), id="sin-vector", marks=task("gradient_check", weight=1)),
    pytest.param(("quadratic", (2, 3), 1e-5), id="quadratic-2d", marks=task("gradient_check", weight=1)),
])
def test_central_difference_values(student, rng, case):
    """central_difference on unseen functions and shapes: values, shape, caller's array untouched"""
    function, shape, h = case
    x = rng.uniform(-1.5, 1.5, shape)
    out = central_difference_of(student, function, x, h)
    n = x.size
    exact = {"sum_of_cubes": 3 * x ** 2,
             "sin_dot": np.cos(x) * np.arange(1, n + 1).reshape(shape),
             "quadratic": 2 * np.arange(1.0, n + 1).reshape(shape) * x}[function]
    expect_close(out["grad"], exact, f"central_difference of {function} at x of shape {shape}, h = {h:g}",
                 rtol=1e-6, atol=1e-7)
    assert np.array_equal(out["x_after"], x), (
        f"central_difference({function}, x of shape {shape}) changed the caller's array x: work on a float64 "
        f"copy (or put every element back exactly)")


@pytest.mark.parametrize("shape", [pytest.param((5,), id="vector", marks=task("gradient_check", weight=0.5)),
                                   pytest.param((2, 3), id="matrix", marks=task("gradient_check", weight=0.5))])
def test_central_difference_probes_from_the_original_point(student, rng, shape):
    """central_difference of a function whose elements interact: every probe starts from the original x"""
    # exp(sum(sin(x))): an element left at x_i - h after its probe changes every later partial derivative
    x = rng.uniform(-1.0, 1.0, shape)
    out = central_difference_of(student, "coupled", x, 1e-5)
    expect_close(out["grad"], np.cos(x) * np.exp(np.sum(np.sin(x))),
                 f"central_difference of exp(sum(sin(x))) at x of shape {shape}, h = 1e-5", rtol=1e-6, atol=1e-8)


@task("gradient_check", weight=1)
def test_central_difference_uses_the_given_step(student, rng):
    """central_difference uses the step h it is given, and divides by 2h"""
    # For sum(x**3) the central difference is exactly 3 x**2 + h**2, whatever h.
    x = rng.uniform(-2, 2, (3, 4))
    for h in (0.25, 0.03):
        out = central_difference_of(student, "sum_of_cubes", x, h)
        expect_close(out["grad"], 3 * x ** 2 + h ** 2,
                     f"central_difference of sum(x**3) with the large step h = {h} (exactly 3 x**2 + h**2)",
                     rtol=1e-9, atol=1e-9)


@task("gradient_check", weight=1)
def test_central_difference_is_second_order(student):
    """central_difference is central: halving h divides the error by about 4"""
    x = np.array([1.1, -0.4, 2.0])
    exact = np.cos(x) * np.arange(1, 4)
    e1, e2 = (np.abs(as_array(central_difference_of(student, "sin_dot", x, h)["grad"],
                              f"central_difference of sin_dot at x of shape (3,), h = {h:g}", shape=x.shape) - exact)
              for h in (2e-2, 1e-2))
    ratio = e1 / np.maximum(e2, 1e-300)
    assert np.all((3.5 < ratio) & (ratio < 4.5)), (
        f"halving h should divide the error of a central difference by about 4 (second order); the error "
        f"ratios per element are {np.round(ratio, 2).tolist()}")


@pytest.mark.parametrize("dtype", [pytest.param(np.int64, id="int64", marks=task("gradient_check", weight=0.5)),
                                   pytest.param(np.float32, id="float32", marks=task("gradient_check", weight=0.5))])
def test_central_difference_of_an_input_of_another_dtype(student, rng, dtype):
    """central_difference of an integer or float32 x probes in float64: the gradient at x, in float64"""
    # Probing in x's own dtype truncates x +- h to x (int: the difference is 0) or rounds it (float32:
    # x + 1e-5 is off by up to 1e-7 * |x|, an error of about 1e-2 in the quotient).
    x = rng.integers(-3, 4, (2, 3)) if dtype is np.int64 else rng.uniform(-2, 2, (2, 3))
    x = x.astype(dtype)
    out = central_difference_of(student, "sum_of_cubes", x, 1e-5, dtype=dtype)
    expect_close(out["grad"], 3 * x.astype(np.float64) ** 2,
                 f"central_difference of sum(x**3) at an x of dtype {np.dtype(dtype).name}, h = 1e-5 (the contract: "
                 f"the gradient at x taken in float64)", rtol=1e-6, atol=1e-7, dtype="float64")
    assert np.array_equal(out["x_after"], x) and out["x_after"].dtype == x.dtype, (
        f"central_difference changed the caller's {np.dtype(dtype).name} array x: work on a float64 copy")


@task("gradient_check", weight=0.5)
def test_central_difference_of_a_zero_dimensional_input(student):
    """central_difference of a 0-d input returns a 0-d gradient"""
    x = np.array(0.3)
    out = central_difference_of(student, "sum_of_cubes", x, 1e-5)
    assert np.shape(out["grad"]) == (), f"central_difference at a 0-d x should return shape (), got {np.shape(out['grad'])}"
    expect_close(out["grad"], 3 * x ** 2, "central_difference of x**3 at the 0-d x = 0.3", rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------------- best_step_size
THETA0 = 1.25
HS = 10.0 ** (-np.arange(2, 25) / 2)


def _reference_errors(dtype):
    def J(theta):
        return np.exp(theta) * np.sin(theta)

    exact = float(np.exp(THETA0) * (np.sin(THETA0) + np.cos(THETA0)))
    out = []
    for h in HS:
        t, step = dtype(THETA0), dtype(h)
        out.append(abs(float((J(t + step) - J(t - step)) / (dtype(2) * step)) - exact))
    return np.array(out), exact


def _sweep(student, name):
    errors = as_numbers(student.variable(name), name)
    assert errors.shape == HS.shape, (
        f"{name} should hold one absolute error per step size of hs ({HS.size} values), got shape {errors.shape}")
    assert np.all(np.isfinite(errors)) and np.all(errors >= 0), f"{name} should hold finite absolute errors (>= 0)"
    return errors


def _best(student, name):
    value = student.variable(name)
    assert isinstance(value, float) and not isinstance(value, bool), (
        f"{name} should be a Python float, got {type(value).__name__}")
    return value


@task("best_step_size", weight=2)
def test_float64_sweep_values(student):
    """errors64: the float64 sweep, |central difference - J'(1.25)| for every h of hs, in order"""
    errors = _sweep(student, "errors64")
    expected, _ = _reference_errors(np.float64)
    truncation = HS >= 1e-5   # where the error is h^2 |J'''| / 6 and does not depend on rounding details
    if not np.allclose(errors[truncation], expected[truncation], rtol=1e-3, atol=0):
        student.comparison_failed(errors, expected, 1e-3, 0.0)  # evidence for naming the mistake (diagnosis.py)
        raise AssertionError(
            "errors64: wrong values for the large steps (h >= 1e-5), where the error is the truncation error of a "
            "central difference; compute |(J(theta0 + h) - J(theta0 - h)) / (2h) - dJ(theta0)| in float64, in the "
            "order of hs")
    rounding = HS < 1e-5      # rounding noise: only its size is reproducible
    ratio = np.log10(np.maximum(errors[rounding], 1e-18) / np.maximum(expected[rounding], 1e-18))
    assert np.all(np.abs(ratio) < 2), (
        "errors64: for the small steps (h < 1e-5) the errors should be rounding noise of the size eps |J| / h; "
        "some are off by more than a factor 100")


@task("best_step_size", weight=2)
def test_float32_sweep_values(student):
    """errors32: the float32 sweep, with theta0 and h converted to float32 first"""
    errors = _sweep(student, "errors32")
    expected, exact = _reference_errors(np.float32)
    large = HS >= 1e-2
    if not np.allclose(errors[large], expected[large], rtol=1e-2, atol=0):
        student.comparison_failed(errors, expected, 1e-2, 0.0)  # evidence for naming the mistake (diagnosis.py)
        raise AssertionError("errors32: wrong values for the large steps (h >= 1e-2), where the truncation error "
                             "dominates")
    assert errors.min() > 1e-6, (
        "errors32: the smallest error is below 1e-6, which float32 cannot reach: was every step of the formula "
        "(theta0 + h, J, the division) really computed in float32?")
    tiny = HS <= 1e-8  # theta0 + h rounds to theta0 in float32: the difference is 0, the error |J'(theta0)|
    assert np.allclose(errors[tiny], exact, rtol=1e-6), (
        "errors32: for h <= 1e-8, float32 theta0 + h equals theta0, so the difference is exactly 0 and the error "
        "is |J'(theta0)|; your errors differ there (was h converted to float32 before the addition?)")


@task("best_step_size", weight=1)
def test_best_h64_in_range(student):
    """best_h64 lies where theory puts the float64 optimum"""
    value = _best(student, "best_h64")
    assert 1e-7 <= value <= 1e-4, (f"best_h64 = {value:.3g}: the best step in float64 is of order eps^(1/3), "
                                   f"between 1e-7 and 1e-4")


@task("best_step_size", weight=1)
def test_best_h32_in_range(student):
    """best_h32 lies where theory puts the float32 optimum"""
    value = _best(student, "best_h32")
    assert 3e-4 <= value <= 3e-2, (f"best_h32 = {value:.3g}: the best step in float32 is of order eps^(1/3), "
                                   f"between 3e-4 and 3e-2")


@task("best_step_size", weight=1)
def test_best_steps_are_far_apart(student):
    """the float32 optimum is at least 100 times the float64 one"""
    h64, h32 = _best(student, "best_h64"), _best(student, "best_h32")
    assert h64 > 0 and h32 / h64 >= 100, (
        f"best_h32 / best_h64 = {h32 / h64 if h64 > 0 else float('nan'):.3g}; float32's epsilon is about 1e9 "
        f"times float64's, so its optimum (eps^(1/3)) is about 1000 times larger")


@task("best_step_size", weight=1)
def test_best_steps_are_the_minima_of_the_sweeps(student):
    """best_h64 and best_h32 are the steps of hs where errors64 and errors32 are smallest"""
    for best, sweep in (("best_h64", "errors64"), ("best_h32", "errors32")):
        value, errors = _best(student, best), _sweep(student, sweep)
        assert np.isclose(HS, value, rtol=1e-9, atol=0).any(), f"{best} = {value!r} is not one of the step sizes in hs"
        assert np.isclose(value, HS[np.argmin(errors)], rtol=1e-9, atol=0), (
            f"{best} = {value:.3g} is not where {sweep} is smallest")


# ------------------------------------------------------------------------------- planted_bug_checks
def check_finite_on(student, array):
    # check_flags calls check(implementation, *args): the "implementation" is the name argument
    # of check_finite(name, array), here the string "the array".
    return student.check_flags("student:check_finite", ["the array"], [array])[0]


def accepts_finite_arrays(student, rng) -> str | None:
    """None when check_finite returns quietly on every finite case, else the first complaint: a
    check that raises on everything must not earn the points for flagging NaN and inf."""
    if "finite cases" not in student.memo:
        student.memo["finite cases"] = next(
            (f"{what}: {outcome}" for what, make, _ in FINITE
             for outcome in [check_finite_on(student, make(rng))] if outcome != "passed"), None)
    return student.memo["finite cases"]


def _float16(values):
    with np.errstate(over="ignore"):
        return np.array(values).astype(np.float16)


def _with(shape, dtype, position, value, fill=0.5):
    a = np.full(shape, fill, dtype=dtype)
    a[position] = value
    return a


NON_FINITE = [
    ("NaN in a float64 (3, 4, 5) array", lambda r: _with((3, 4, 5), np.float64, (2, 0, 4), np.nan, r.standard_normal((3, 4, 5))), 1),
    ("+inf in a float32 (6, 7) array", lambda r: _with((6, 7), np.float32, (5, 6), np.inf), 1),
    ("-inf alone in a float64 vector", lambda r: _with((9,), np.float64, (0,), -np.inf), 1),
    ("-inf in a float16 array", lambda r: _with((2, 2, 2, 2), np.float16, (1, 1, 0, 1), -np.inf), 1),
    ("NaN in a float16 array", lambda r: _with((5, 3), np.float16, (4, 2), np.nan), 1),
    ("a float16 overflow (70000 -> inf)", lambda r: _float16([1.0, 70000.0, 2.0]), 1),
    ("NaN and inf together, among huge finite values", lambda r: np.array([1e308, np.nan, -1e308, np.inf]), 1),
    ("a 0-d NaN", lambda r: np.array(np.nan), 0.5),
]
FINITE = [
    ("a float64 array of huge values (+-1e308: their sum overflows)", lambda r: np.array([1e308, 1e308, -1e308, 5e-324]), 1),
    ("a float16 array at float16's limits (+-65504, subnormals)", lambda r: _float16([65504, 65504, -65504, 6e-8]), 1),
    ("an int64 array", lambda r: r.integers(-10 ** 12, 10 ** 12, (4, 3)), 0.5),
    ("a random float32 array", lambda r: r.standard_normal((3, 5, 2)).astype(np.float32), 0.5),
    ("an empty float array", lambda r: np.zeros((0, 3)), 0.5),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"bad{i}", marks=task("planted_bug_checks", weight=c[2]))
                                  for i, c in enumerate(NON_FINITE)])
def test_check_finite_flags_non_finite_values(student, rng, case):
    """check_finite raises AssertionError for NaN, +inf or -inf"""
    what, make, _ = case
    result = check_finite_on(student, make(rng))
    assert result.startswith("flagged: AssertionError"), (
        f"check_finite on {what} should raise AssertionError; got {result}")
    complaint = accepts_finite_arrays(student, rng)
    assert complaint is None, (f"check_finite flagged {what}, but it also rejects finite arrays ({complaint}): a "
                               f"flag only counts when finite values pass")


@pytest.mark.parametrize("case", [pytest.param(c, id=f"ok{i}", marks=task("planted_bug_checks", weight=c[2]))
                                  for i, c in enumerate(FINITE)])
def test_check_finite_accepts_finite_values(student, rng, case):
    """check_finite accepts arrays whose values are all finite"""
    what, make, _ = case
    result = check_finite_on(student, make(rng))
    assert result == "passed", f"check_finite on {what} should return quietly; got {result}"


def _course_lib_maxpool_backward(dout, x, k, s):
    """course_lib's vectorised max pool backward (assignment 05), in check_pool_backward's interface."""
    out = ops.MaxPool2dBackward(k, s, 0).compute(nd.array(np.asarray(dout)), nd.array(np.asarray(x)))
    return out.numpy()


CONV_IMPLEMENTATIONS = {
    "the grader's correct conv backward": planted_bugs.conv_correct,
    "course_lib's naive conv2d_backward (a second, independent correct implementation)": naive_conv2d_backward,
    **{name: getattr(planted_bugs, name) for name in planted_bugs.CONV_BUGS},
}
POOL_IMPLEMENTATIONS = {
    "the grader's correct max pool backward": planted_bugs.pool_correct,
    "course_lib's vectorised max pool backward (assignment 05)": _course_lib_maxpool_backward,
    **{name: getattr(planted_bugs, name) for name in planted_bugs.POOL_BUGS},
}
CORRECT = [(check, name) for check, table in (("check_conv_backward", CONV_IMPLEMENTATIONS),
                                              ("check_pool_backward", POOL_IMPLEMENTATIONS))
           for name in table if not name.startswith(("conv_", "pool_"))]
BUGS = [(check, name) for check, table in (("check_conv_backward", CONV_IMPLEMENTATIONS),
                                           ("check_pool_backward", POOL_IMPLEMENTATIONS))
        for name in table if name.startswith(("conv_", "pool_"))]


def outcome_of(student, check: str, name: str) -> str:
    """What the student's check did with one implementation. All implementations of a check run
    in one request, shuffled, each behind an opaque grader-provided function."""
    key = ("check_flags", check)
    if key not in student.memo:
        table = CONV_IMPLEMENTATIONS if check == "check_conv_backward" else POOL_IMPLEMENTATIONS
        names = list(table)
        random.SystemRandom().shuffle(names)
        functions = [student.grader_function(table[n]) for n in names]
        try:
            student.memo[key] = dict(zip(names, student.check_flags(f"student:{check}", functions)))
        except StudentError as err:
            student.memo[key] = err
    outcome = student.memo[key]
    if isinstance(outcome, StudentError):
        raise outcome
    return outcome[name]


@pytest.mark.parametrize("check,name", [pytest.param(c, n, id=n.split(" (")[0], marks=task("planted_bug_checks", weight=1.5))
                                        for c, n in CORRECT])
def test_checks_accept_correct_implementations(student, check, name):
    """your checks accept correct backward passes"""
    result = outcome_of(student, check, name)
    assert result == "passed", f"{check} did not accept {name}: {result}"


@pytest.mark.parametrize("check,bug", [pytest.param(c, b, id=b, marks=task("planted_bug_checks", weight=1))
                                       for c, b in BUGS])
def test_checks_flag_planted_bugs(student, check, bug):
    """your checks flag planted bugs, including ones the notebook did not show"""
    result = outcome_of(student, check, bug)
    label = bug.split("_", 1)[1].replace("_", " ")
    assert result.startswith("flagged: AssertionError"), (
        f"{check} did not flag a backward pass with a planted bug ({label}) with an AssertionError: {result}. "
        f"Which input would make this bug visible?")
    rejected = [name for c, name in CORRECT if c == check and outcome_of(student, check, name) != "passed"]
    assert not rejected, (f"{check} flagged the planted bug ({label}), but it also rejects a correct backward pass "
                          f"({rejected[0]}): a flag only counts when correct code passes")
