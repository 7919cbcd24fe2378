"""Hidden checks of 01_forward_ops: every compute on shapes and values the notebook never used."""
import numpy as np
import pytest

from course_tools.grading.suite import expect_close, task

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


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c[1]}{c[2] or ''}", marks=task(c[0])) for c in ELEMENTWISE])
@pytest.mark.parametrize("shape", [(7,), (3, 1, 5), ()])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_elementwise_op_on_unseen_shapes(student, rng, case, shape, dtype):
    """elementwise op on a vector, a 3-D array and a 0-d array, float64 and float32"""
    _, op, attrs, arity, reference = case
    arrays = [(rng.uniform(0.5, 2.0, shape) if op in POSITIVE_ONLY else rng.standard_normal(shape)).astype(dtype)
              for _ in range(arity)]
    expected = reference(*[a.astype("float64") for a in arrays])
    tol = 1e-12 if dtype == "float64" else 1e-5
    expect_close(student.forward(op, attrs, *arrays), expected, f"{op}({attrs}) on {shape} {dtype}",
                 rtol=tol, atol=tol, dtype=dtype)
