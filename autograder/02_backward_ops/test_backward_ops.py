"""Hidden checks of 02_backward_ops, part 1: every op's gradient, called directly (no reverse mode),
against PyTorch's autograd on shapes and values the notebook never used."""
import numpy as np
import pytest
import torch

from course_tools.grading.api import as_float, as_int, as_list, expect_close, notebook_value, task


def torch_grads(fn, arrays, out_grad):
    """The vector-Jacobian products of fn at arrays for out_grad, in float64."""
    ts = [torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in arrays]
    out = fn(*ts)
    grads = torch.autograd.grad(out, ts, grad_outputs=torch.tensor(np.asarray(out_grad, dtype=np.float64)),
                                allow_unused=True)
    return [np.zeros(np.shape(a)) if g is None else g.numpy() for g, a in zip(grads, arrays)]


def check_op_gradient(student, op, attrs, arrays, out_grad, torch_fn, what, rtol=1e-9, atol=1e-10, dtype=None):
    """op.gradient(out_grad, node) for node = op(*arrays), one adjoint per input, against torch."""
    got = student.gradient(op, attrs, arrays, out_grad)
    expected = torch_grads(torch_fn, arrays, out_grad)
    if len(got) != len(expected):
        raise AssertionError(f"{what}: gradient returned {len(got)} value{'' if len(got) == 1 else 's'} for "
                             f"{len(expected)} input{'' if len(expected) == 1 else 's'}")
    # Every adjoint is compared before the first failure is raised: a right adjoint is evidence too
    # (a mistake that would make both wrong is not named when one of them is right, diagnosis.py).
    failures = []
    for i, (g, e) in enumerate(zip(got, expected)):
        label = what if len(expected) == 1 else f"{what}, adjoint of input {i}"
        try:
            expect_close(g, e, label, rtol=rtol, atol=atol, dtype=dtype)  # a wrong shape is evidence too
        except AssertionError as err:
            failures.append(AssertionError(f"{label}: the adjoint has shape {np.shape(g)}, but the input has shape "
                                           f"{np.shape(e)}: an adjoint always has its input's shape")
                            if np.shape(g) != np.shape(e) else err)
    if failures:
        raise failures[0]


def signed(rng, shape, low=0.5, high=2.0):
    return np.asarray(rng.uniform(low, high, shape) * rng.choice([-1.0, 1.0], shape), dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# Elementwise ops

@task("backward_negate", weight=2)
@pytest.mark.parametrize("shape", [(6,), (2, 3, 4), ()])
def test_negate_gradient(student, rng, shape):
    """negate's gradient on a vector, a 3-D array and a 0-d array"""
    x, g = rng.standard_normal(shape), rng.standard_normal(shape)
    check_op_gradient(student, "Negate", {}, [x], g, lambda a: -a, f"Negate.gradient on {shape}")


@task("backward_negate")
def test_negate_gradient_keeps_float32(student, rng):
    """negate's gradient of a float32 tensor is float32"""
    x, g = rng.standard_normal((3, 2)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
    check_op_gradient(student, "Negate", {}, [x], g, lambda a: -a, "Negate.gradient on float32 (3, 2)",
                      rtol=1e-6, atol=1e-7, dtype="float32")


@task("backward_divide_scalar", weight=2)
@pytest.mark.parametrize("c", [2.5, -4, 3, 0.2])
def test_divide_scalar_gradient(student, rng, c):
    """divide_scalar's gradient for positive, negative, integer and small divisors"""
    x, g = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    check_op_gradient(student, "DivScalar", {"scalar": c}, [x], g, lambda a: a / c, f"DivScalar({c}).gradient on (3, 4)")


@task("backward_divide_scalar")
def test_divide_scalar_gradient_of_a_0d_tensor(student, rng):
    """divide_scalar's gradient on a 0-d tensor"""
    check_op_gradient(student, "DivScalar", {"scalar": 8}, [np.array(1.5)], np.array(-2.0), lambda a: a / 8,
                      "DivScalar(8).gradient on a 0-d tensor")


@task("backward_power_scalar", weight=2)
@pytest.mark.parametrize("p", [2, 3, -1, -2, 0, 1, 5])
def test_power_scalar_gradient(student, rng, p):
    """power_scalar's gradient p a^(p-1) for integer p (also 0, 1 and negative) on bases of both signs"""
    x, g = signed(rng, (4, 3)), rng.standard_normal((4, 3))
    check_op_gradient(student, "PowerScalar", {"scalar": p}, [x], g, lambda a: a ** p,
                      f"PowerScalar({p}).gradient on (4, 3)")


@task("backward_power_scalar")
def test_power_scalar_gradient_uses_the_input_not_the_output(student):
    """power_scalar's gradient at a = 3 for p = 2 (the derivative needs the input a, not the output a^p)"""
    check_op_gradient(student, "PowerScalar", {"scalar": 2}, [np.array([3.0, -0.5])], np.array([1.0, 2.0]),
                      lambda a: a ** 2, "PowerScalar(2).gradient at a = (3, -0.5), out_grad (1, 2)")


@task("backward_power_scalar")
def test_power_scalar_gradient_on_3d(student, rng):
    """power_scalar's gradient on a 3-D tensor"""
    x, g = signed(rng, (2, 3, 2)), rng.standard_normal((2, 3, 2))
    check_op_gradient(student, "PowerScalar", {"scalar": 4}, [x], g, lambda a: a ** 4,
                      "PowerScalar(4).gradient on (2, 3, 2)")


@task("backward_divide", weight=2)
@pytest.mark.parametrize("shape", [(7,), (2, 3, 2), ()])
def test_divide_gradient(student, rng, shape):
    """divide's two adjoints (of a and of b), denominators of both signs"""
    a, b, g = rng.standard_normal(shape), signed(rng, shape), rng.standard_normal(shape)
    check_op_gradient(student, "EWiseDiv", {}, [a, b], g, lambda x, y: x / y, f"EWiseDiv.gradient on {shape}")


@task("backward_divide")
def test_divide_gradient_order(student):
    """divide's adjoints come back in the order (of a, of b)"""
    a, b = np.array([6.0, -1.0, 2.0]), np.array([2.0, 4.0, -0.5])
    check_op_gradient(student, "EWiseDiv", {}, [a, b], np.array([1.0, 1.0, 3.0]), lambda x, y: x / y,
                      "EWiseDiv.gradient at a = (6, -1, 2), b = (2, 4, -0.5)")


@task("backward_power", weight=2)
@pytest.mark.parametrize("shape", [(6,), (3, 1, 4), ()])
def test_power_gradient(student, rng, shape):
    """power's two adjoints (of the base and of the exponent)"""
    a, b, g = rng.uniform(0.3, 3.0, shape), rng.uniform(-2.0, 2.5, shape), rng.standard_normal(shape)
    check_op_gradient(student, "EWisePow", {}, [a, b], g, lambda x, y: x ** y, f"EWisePow.gradient on {shape}")


@task("backward_power")
def test_power_gradient_with_integer_exponents(student, rng):
    """power's adjoints with exponents 0, 1, 2 and -1"""
    a = rng.uniform(0.5, 2.0, (4,))
    b = np.array([0.0, 1.0, 2.0, -1.0])
    check_op_gradient(student, "EWisePow", {}, [a, b], rng.standard_normal(4), lambda x, y: x ** y,
                      "EWisePow.gradient with exponents (0, 1, 2, -1)")


@task("backward_log", weight=2)
@pytest.mark.parametrize("shape", [(8,), (2, 2, 3), ()])
def test_log_gradient(student, rng, shape):
    """log's gradient out_grad / a"""
    x, g = rng.uniform(0.05, 20.0, shape), rng.standard_normal(shape)
    check_op_gradient(student, "Log", {}, [x], g, torch.log, f"Log.gradient on {shape}")


@task("backward_log")
def test_log_gradient_keeps_float32(student, rng):
    """log's gradient of a float32 tensor"""
    x, g = rng.uniform(0.5, 4.0, (3, 3)).astype(np.float32), rng.standard_normal((3, 3)).astype(np.float32)
    check_op_gradient(student, "Log", {}, [x], g, torch.log, "Log.gradient on float32 (3, 3)", rtol=1e-5, atol=1e-6,
                      dtype="float32")


@task("backward_exp", weight=2)
@pytest.mark.parametrize("shape", [(8,), (2, 2, 3), ()])
def test_exp_gradient(student, rng, shape):
    """exp's gradient out_grad * exp(a)"""
    x, g = rng.uniform(-4.0, 4.0, shape), rng.standard_normal(shape)
    check_op_gradient(student, "Exp", {}, [x], g, torch.exp, f"Exp.gradient on {shape}")


@task("backward_exp")
def test_exp_gradient_keeps_float32(student, rng):
    """exp's gradient of a float32 tensor"""
    x, g = rng.uniform(-3.0, 3.0, (2, 5)).astype(np.float32), rng.standard_normal((2, 5)).astype(np.float32)
    check_op_gradient(student, "Exp", {}, [x], g, torch.exp, "Exp.gradient on float32 (2, 5)", rtol=1e-5, atol=1e-6,
                      dtype="float32")


@task("backward_relu", weight=2)
@pytest.mark.parametrize("shape", [(9,), (3, 2, 4)])
def test_relu_gradient(student, rng, shape):
    """relu's gradient: out_grad where a > 0, else 0"""
    x, g = signed(rng, shape, 0.1, 2.0), rng.standard_normal(shape)
    check_op_gradient(student, "ReLU", {}, [x], g, torch.relu, f"ReLU.gradient on {shape}")


# Two inputs, so that a mistake at zero is seen twice (a diagnosis needs two inputs that agree).
ZEROS = [np.array([[0.0, -0.0, 1.0], [-1.0, 0.0, 2.0]]),
         np.array([[[0.0, 0.5], [-0.0, -2.0]], [[3.0, 0.0], [0.0, -0.0]]])]


@pytest.mark.parametrize("x", [pytest.param(x, id=f"{x.ndim}d", marks=task("backward_relu")) for x in ZEROS])
def test_relu_gradient_is_zero_at_zero(student, x):
    """relu's gradient is 0 at exactly a = 0 (as in PyTorch)"""
    g = np.arange(3.0, 3.0 + x.size).reshape(x.shape)
    got = student.gradient("ReLU", {}, [x], g)
    expect_close(got[0], np.where(x > 0, g, 0.0), "ReLU.gradient at a with exact zeros (the gradient at 0 is 0)",
                 rtol=0, atol=0)


def with_zeros(rng, x):
    """x with about a third of its entries set to exact zeros, half of them -0.0 (ReLU outputs and
    padding give a gradient such inputs); a 0-d x becomes 0.0."""
    x = np.array(x, dtype=np.float64)
    hit = rng.random(x.shape) < 1 / 3
    hit.flat[0] = True
    x[hit] = np.where(rng.random(x.shape) < 0.5, 0.0, -0.0)[hit]
    return x


# Every elementwise gradient whose input may be zero, on inputs with exact zeros: a formula that
# is right except at zero (one that divides by the input, p * node / a for power_scalar, or by
# the output) fails here. (exponent, arity, torch function, the adjoints compared: EWisePow's
# exponent adjoint a^b log a has no value at a = 0, so only the base's is compared there.)
AT_ZERO = [("backward_power_scalar", "PowerScalar", {"scalar": 3}, lambda x: x ** 3, (0,)),
           ("backward_power_scalar", "PowerScalar", {"scalar": 2}, lambda x: x ** 2, (0,)),
           ("backward_divide_scalar", "DivScalar", {"scalar": -1.5}, lambda x: x / -1.5, (0,)),
           ("backward_negate", "Negate", {}, lambda x: -x, (0,)),
           ("backward_exp", "Exp", {}, torch.exp, (0,)),
           ("backward_relu", "ReLU", {}, torch.relu, (0,)),
           ("backward_divide", "EWiseDiv", {}, lambda x, y: x / y, (0, 1)),
           ("backward_power", "EWisePow", {}, lambda x, y: x ** y, (0,))]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c[1]}{c[2] or ''}", marks=task(c[0])) for c in AT_ZERO])
@pytest.mark.parametrize("shape", [(3, 4), (2, 1, 3), ()])
def test_elementwise_gradient_at_exact_zeros(student, rng, case, shape):
    """an elementwise gradient where its input holds exact zeros and -0.0 (the gradient exists there)"""
    _, op, attrs, fn, compared = case
    arrays = [with_zeros(rng, signed(rng, shape))]
    if op in ("EWiseDiv", "EWisePow"):
        arrays.append(signed(rng, shape) if op == "EWiseDiv" else rng.uniform(1.0, 3.0, shape))  # b: never 0 / a^b: b >= 1
    g = rng.standard_normal(shape)
    got = student.gradient(op, attrs, arrays, g)
    expected = torch_grads(fn, arrays, g)
    failures = []
    for i in compared:
        label = f"{op}({attrs}).gradient on {shape} with exact zeros in the input" + (
            f", adjoint of input {i}" if len(arrays) > 1 else "")
        try:
            expect_close(got[i] if i < len(got) else None, expected[i], label, rtol=1e-10, atol=1e-12)
        except AssertionError as err:
            failures.append(err)
    if failures:
        raise failures[0]


@task("backward_power_scalar")
def test_power_scalar_gradient_where_the_output_overflows(student):
    """power_scalar's gradient p a^(p-1) where a^p overflows float64 but a^(p-1) does not"""
    x, g = np.array([1e103, -2e103, 3.0]), np.array([1.0, 0.5, 2.0])
    expect_close(student.gradient("PowerScalar", {"scalar": 3}, [x], g)[0], 3 * x ** 2 * g,
                 "PowerScalar(3).gradient at a = 1e103, where a^3 is inf in float64 (p a^2 is finite)",
                 rtol=1e-12, atol=0)


@task("backward_relu")
def test_relu_gradient_keeps_float32(student, rng):
    """relu's gradient of a float32 tensor is float32"""
    x, g = signed(rng, (4, 4), 0.1, 1.0).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)
    check_op_gradient(student, "ReLU", {}, [x], g, torch.relu, "ReLU.gradient on float32 (4, 4)", rtol=0, atol=0,
                      dtype="float32")


# ---------------------------------------------------------------------------------------------
# Shaping ops

RESHAPES = [((3, 4), (2, 6)), ((2, 3, 4), (4, -1)), ((12,), (2, 1, 3, 2)), ((1, 5, 1), (5,)),
            ((2, 3), (6,)), ((1, 1), ()), ((), (1, 1, 1))]


@task("backward_reshape")
@pytest.mark.parametrize("src,dst", RESHAPES, ids=[f"{s}->{d}" for s, d in RESHAPES])
def test_reshape_gradient(student, rng, src, dst):
    """reshape's gradient puts out_grad back into the input's shape (also -1, 0-d and size-1 axes)"""
    x = rng.standard_normal(src)
    g = rng.standard_normal(np.reshape(x, dst).shape)
    check_op_gradient(student, "Reshape", {"shape": dst}, [x], g, lambda a: a.reshape(dst),
                      f"Reshape({dst}).gradient for an input of shape {src}", rtol=0, atol=0)


BROADCASTS = [
    ((4,), (3, 4), "a prepended axis"),
    ((5,), (2, 3, 5), "two prepended axes"),
    ((3, 1), (3, 4), "a size-1 axis"),
    ((1, 3), (2, 4, 3), "a prepended axis and a size-1 axis"),
    ((2, 1, 4), (3, 2, 5, 4), "a prepended axis and a middle size-1 axis"),
    ((1,), (2, 3), "a prepended axis and a size-1 axis of a vector"),
    ((), (3, 2), "a 0-d input"),
    ((1, 1), (2, 3), "two size-1 axes"),
    ((1, 4), (1, 4), "an unchanged shape with a size-1 axis"),
    ((1, 1), (1, 5), "a size-1 axis that stays 1 next to one that is stretched"),
    ((3, 1, 1), (2, 3, 4, 1), "a prepended axis, a stretched and a kept size-1 axis"),
    ((3, 1, 1), (3, 5, 1), "a stretched size-1 axis before a kept one, nothing prepended"),
    # size 0: the gradient still has the input's shape, all zeros (issue 37: a sum that skipped
    # the axes whose out_grad size is 0 instead of 1 reshaped (3, 0) to (3, 1) and raised)
    ((3, 1), (3, 0), "a size-1 axis stretched to size 0"),
    ((3, 1), (2, 3, 0), "a prepended axis and a size-1 axis stretched to size 0"),
]


@task("backward_broadcast_to")
@pytest.mark.parametrize("src,dst,what", BROADCASTS, ids=[b[2].replace(" ", "_") for b in BROADCASTS])
def test_broadcast_to_gradient(student, rng, src, dst, what):
    """broadcast_to's gradient sums out_grad over prepended axes and over stretched size-1 axes"""
    x, g = rng.standard_normal(src), rng.standard_normal(dst)
    check_op_gradient(student, "BroadcastTo", {"shape": dst}, [x], g, lambda a: a.expand(*dst) if dst else a,
                      f"BroadcastTo({dst}).gradient for an input of shape {src} ({what})", rtol=1e-12, atol=1e-12)


@task("backward_broadcast_to", weight=2)
def test_broadcast_bias_gradient_counts_every_row(student):
    """the gradient of a bias (4,) broadcast to a batch (6, 4) adds up all 6 rows"""
    got = student.gradient("BroadcastTo", {"shape": (6, 4)}, [np.zeros(4)], np.ones((6, 4)))
    expect_close(got[0], np.full(4, 6.0), "BroadcastTo((6, 4)).gradient of a (4,) bias for out_grad of ones",
                 rtol=0, atol=0)


@task("backward_broadcast_to", weight=2)
@pytest.mark.parametrize("grad_shape,shape", [((2, 3, 4), [4]), ((2, 3, 4), [3, 1]), ((5, 1, 3), [1, 1, 3]),
                                              ((4, 2), [4, 2]), ((3, 2), [])])
def test_reduce_to_shape_accepts_a_list(student, rng, grad_shape, shape):
    """reduce_to_shape(grad, shape) with shape given as a list"""
    g = rng.standard_normal(grad_shape)
    lead = len(grad_shape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and grad_shape[lead + i] != 1)
    expected = g.sum(axis=axes).reshape(shape) if axes else g.reshape(shape)
    got = student.call("course_lib.ops.shaping:reduce_to_shape", g, as_tensors=True, shape=list(shape))
    expect_close(got, expected, f"reduce_to_shape(grad of shape {grad_shape}, {list(shape)})", rtol=1e-12, atol=1e-12)


SUMS = [((3, 4, 5), None), ((3, 4, 5), 1), ((3, 4, 5), -1), ((3, 4, 5), -3), ((3, 4, 5), (2, 0)),
        ((3, 4, 5), (-1, -2)), ((2, 3, 4, 5), (1, 3)), ((1, 6, 1), (0, 2)), ((1, 6, 1), 1), ((6,), None),
        ((6,), 0), ((2, 3), (0, 1))]


@task("backward_summation")
@pytest.mark.parametrize("shape,axes", SUMS, ids=[f"{s}-{a}" for s, a in SUMS])
def test_summation_gradient(student, rng, shape, axes):
    """summation's gradient copies out_grad back along the summed axes (None, ints, negative, tuples)"""
    x = rng.standard_normal(shape)
    np_axes = tuple(axes) if isinstance(axes, tuple) else axes
    g = rng.standard_normal(np.sum(x, axis=np_axes).shape)
    dims = tuple(range(len(shape))) if axes is None else np_axes
    check_op_gradient(student, "Summation", {"axes": axes}, [x], g, lambda a: a.sum(dim=dims),
                      f"Summation(axes={axes}).gradient for an input of shape {shape}", rtol=0, atol=0)


@task("backward_summation", weight=2)
def test_summation_gradient_of_a_full_sum(student):
    """summation over all axes: every element's adjoint is the (0-d) out_grad"""
    got = student.gradient("Summation", {"axes": None}, [np.ones((2, 3))], np.array(2.5))
    expect_close(got[0], np.full((2, 3), 2.5), "Summation(axes=None).gradient of (2, 3) for out_grad 2.5",
                 rtol=0, atol=0)


TRANSPOSES = [((4, 3), None), ((2, 4, 3), None), ((2, 3, 4, 5), None), ((2, 4, 3), (0, 2)), ((2, 4, 3), (1, 0)),
              ((2, 3, 4, 5), (0, 3)), ((2, 3, 4, 5), (-1, 1)), ((2, 3, 4, 5), (2, 0))]


@task("backward_transpose")
@pytest.mark.parametrize("shape,axes", TRANSPOSES, ids=[f"{s}-{a}" for s, a in TRANSPOSES])
def test_transpose_gradient(student, rng, shape, axes):
    """transpose's gradient swaps the same two axes back (default: the last two)"""
    x = rng.standard_normal(shape)
    pair = (-2, -1) if axes is None else axes
    g = rng.standard_normal(np.swapaxes(x, *pair).shape)
    check_op_gradient(student, "Transpose", {"axes": axes}, [x], g, lambda a: a.transpose(*pair),
                      f"Transpose(axes={axes}).gradient for an input of shape {shape}", rtol=0, atol=0)


MATMULS = [((4, 3), (3, 5)), ((1, 3), (3, 1)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)),
           ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 4, 2)), ((2, 1, 3, 2), (1, 4, 2, 3)), ((3, 2, 1, 3), (3, 2)),
           # a batch of size 0: each adjoint still has its input's shape (zeros), also where the batch
           # axis was broadcast from a matrix (issue 37)
           ((0, 3, 4), (4, 5)), ((3, 4), (0, 4, 5))]


@task("backward_matmul")
@pytest.mark.parametrize("sa,sb", MATMULS, ids=[f"{a}@{b}" for a, b in MATMULS])
def test_matmul_gradient(student, rng, sa, sb):
    """matmul's two adjoints, with batch axes that broadcast (summed back to each input's shape)"""
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    g = rng.standard_normal(np.matmul(a, b).shape)
    check_op_gradient(student, "MatMul", {}, [a, b], g, torch.matmul, f"MatMul.gradient for {sa} @ {sb}",
                      rtol=1e-10, atol=1e-10)


@task("backward_matmul")
def test_matmul_gradient_keeps_float32(student, rng):
    """matmul's adjoints of float32 matrices are float32"""
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
    g = rng.standard_normal((3, 2)).astype(np.float32)
    check_op_gradient(student, "MatMul", {}, [a, b], g, torch.matmul, "MatMul.gradient for float32 (3, 4) @ (4, 2)",
                      rtol=1e-5, atol=1e-5, dtype="float32")


# ----------------------------------------------------------------------------- broadcast_adjoint
# The derivation first: x (2, 1, 4) broadcast to y (5, 2, 3, 4), y-bar all ones. The messages do
# not say the right numbers.
BROADCAST_HINT = "count the copies each element of x has in y, and the axes of y along which they lie"


@task("broadcast_adjoint")
def test_broadcast_adjoint_summed_axes(student):
    """the derivation first: the axes of y-bar summed when (2, 1, 4) is broadcast to (5, 2, 3, 4)"""
    value = notebook_value(student, "broadcast_summed_axes")
    axes = [as_int(a, "broadcast_summed_axes[...]") for a in as_list(value, "broadcast_summed_axes")]
    if axes != [0, 2]:
        raise AssertionError(f"broadcast_summed_axes: not the axes of y that hold the copies; {BROADCAST_HINT}")


@task("broadcast_adjoint")
def test_broadcast_adjoint_entry(student):
    """the derivation first: each entry of x-bar for that broadcast and a y-bar of ones"""
    entry = as_float(notebook_value(student, "broadcast_adjoint_entry"), "broadcast_adjoint_entry")
    if not np.isclose(entry, 15.0, rtol=1e-9, atol=1e-9):
        raise AssertionError(f"broadcast_adjoint_entry: not the right count; {BROADCAST_HINT}")


def _ints_answer(student, name):
    """A notebook answer that is a tuple or list of ints (a shape, or axis numbers)."""
    value = notebook_value(student, name)
    return tuple(as_int(n, f"{name}[...]") for n in as_list(value, name))


# ----------------------------------------------------------------------------- summation_adjoint
# The derivation first: x (2, 3, 4), y = x.sum(axis=(0, 2)), y-bar given. What the answers must
# be comes from PyTorch's autograd, not from constants here; any reshape of y-bar that broadcasts
# to x-bar is right ((1, 3, 1), and also (3, 1)). The messages do not say the right values.
SUMMATION_X, SUMMATION_AXES, SUMMATION_Y_BAR = (2, 3, 4), (0, 2), np.array([0.5, -2.0, 7.0])
SUMMATION_ENTRIES = [(1, 2, 3), (0, 1, 2)]
SUMMATION_HINT = "each element of x enters one y_j; y-bar's axis must line up with the axis of x it came from"


def _summation_x_bar():
    x = torch.zeros(SUMMATION_X, dtype=torch.float64, requires_grad=True)
    x.sum(dim=SUMMATION_AXES).backward(torch.tensor(SUMMATION_Y_BAR))
    return x.grad.numpy()


@task("summation_adjoint")
def test_summation_adjoint_reshaped_shape(student):
    """the derivation first: the shape y-bar is reshaped to, so that broadcast_to gives x-bar (x (2, 3, 4), axes (0, 2))"""
    shape = _ints_answer(student, "summation_reshaped_shape")
    if any(n < 1 for n in shape) or int(np.prod(shape)) != SUMMATION_Y_BAR.size:
        raise AssertionError(f"summation_reshaped_shape: {shape} is not a shape y-bar (3 numbers) can be reshaped to")
    try:
        x_bar = np.broadcast_to(SUMMATION_Y_BAR.reshape(shape), SUMMATION_X)
    except ValueError:
        raise AssertionError(f"summation_reshaped_shape: y-bar reshaped to {shape} does not broadcast to x's shape "
                             f"{SUMMATION_X}; {SUMMATION_HINT}") from None
    if not np.array_equal(x_bar, _summation_x_bar()):
        raise AssertionError(f"summation_reshaped_shape: y-bar reshaped to {shape} broadcasts to x's shape, but puts "
                             f"its values on the wrong axis; {SUMMATION_HINT}")


@task("summation_adjoint")
def test_summation_adjoint_entries(student):
    """the derivation first: two entries of x-bar for that summation and y-bar"""
    entries = [as_float(v, "summation_adjoint_entries[...]")
               for v in as_list(notebook_value(student, "summation_adjoint_entries"),
                                       "summation_adjoint_entries", n=len(SUMMATION_ENTRIES))]
    x_bar = _summation_x_bar()
    for got, index in zip(entries, SUMMATION_ENTRIES):
        if not np.isclose(got, x_bar[index], rtol=1e-9, atol=1e-9):
            raise AssertionError(f"summation_adjoint_entries: x-bar{list(index)} is not right; which y_j does "
                                 f"x{list(index)} enter, and with which derivative?")


# ----------------------------------------------------------------------------- matmul_adjoint
# The derivation first: A (5, 1, 2, 3) @ B (4, 3, 6) -> C (5, 4, 2, 6). The unreduced shapes are
# those of NumPy's batched C-bar B^T and A^T C-bar; the summed axes are right when summing the
# unreduced adjoint over them and reshaping gives PyTorch's adjoint.
MATMUL_A, MATMUL_B = (5, 1, 2, 3), (4, 3, 6)
MATMUL_HINT = "line the batch axes up from the right: along which axes was the input copied?"


def _matmul_adjoints():
    """(A, B, C-bar, A-bar and B-bar from torch, unreduced C-bar B^T, unreduced A^T C-bar)."""
    rng = np.random.default_rng(26)
    a, b = rng.standard_normal(MATMUL_A), rng.standard_normal(MATMUL_B)
    g = rng.standard_normal(np.matmul(a, b).shape)
    a_bar, b_bar = torch_grads(torch.matmul, [a, b], g)
    return a_bar, b_bar, np.matmul(g, np.swapaxes(b, -1, -2)), np.matmul(np.swapaxes(a, -1, -2), g)


def _check_unreduced_shape(student, name, expected):
    shape = _ints_answer(student, name)
    if shape != tuple(expected):
        raise AssertionError(f"{name}: {shape} is not the shape the formula gives with batched matmul on these "
                             f"shapes; only the last two axes are matrix axes, the others broadcast")


def _check_summed_axes(student, name, unreduced, adjoint, input_name):
    axes = _ints_answer(student, name)
    if list(axes) != sorted(set(axes)) or any(not 0 <= ax < unreduced.ndim for ax in axes):
        raise AssertionError(f"{name}: {list(axes)} should be distinct axes of the unreduced adjoint, "
                             f"in increasing order")
    summed = unreduced.sum(axis=axes)
    if summed.size != adjoint.size or not np.allclose(summed.reshape(adjoint.shape), adjoint, rtol=1e-10, atol=1e-10):
        raise AssertionError(f"{name}: summing the unreduced adjoint over {list(axes)} does not give {input_name}-bar; "
                             f"{MATMUL_HINT}")


@task("matmul_adjoint")
def test_matmul_adjoint_unreduced_a_shape(student):
    """the derivation first: the shape of the unreduced A-bar for (5, 1, 2, 3) @ (4, 3, 6)"""
    _check_unreduced_shape(student, "matmul_unreduced_a_shape", _matmul_adjoints()[2].shape)


@task("matmul_adjoint")
def test_matmul_adjoint_summed_axes_a(student):
    """the derivation first: the axes summed to bring the unreduced A-bar to A's shape (5, 1, 2, 3)"""
    a_bar, _, unreduced_a, _ = _matmul_adjoints()
    _check_summed_axes(student, "matmul_summed_axes_a", unreduced_a, a_bar, "A")


@task("matmul_adjoint")
def test_matmul_adjoint_unreduced_b_shape(student):
    """the derivation first: the shape of the unreduced B-bar for (5, 1, 2, 3) @ (4, 3, 6)"""
    _check_unreduced_shape(student, "matmul_unreduced_b_shape", _matmul_adjoints()[3].shape)


@task("matmul_adjoint")
def test_matmul_adjoint_summed_axes_b(student):
    """the derivation first: the axes summed to bring the unreduced B-bar to B's shape (4, 3, 6)"""
    _, b_bar, _, unreduced_b = _matmul_adjoints()
    _check_summed_axes(student, "matmul_summed_axes_b", unreduced_b, b_bar, "B")
