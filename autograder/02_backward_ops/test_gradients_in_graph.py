"""Hidden checks that each gradient is built from ops on Tensors, inside the graph.

A gradient computed outside the graph (raw arrays wrapped in a new Tensor) has the right
values but cannot be differentiated again: seed 003's third classic mistake. The grader does
not take the worker's word for it: the adjoints' graph is evaluated again with a second
out_grad, and the values must be the gradient for that out_grad (the grader's own, from
PyTorch). Adjoints computed outside the graph keep the values of the first out_grad.
Only forward computations run in the re-evaluation (01's reference code), so this check
depends on no other task of the notebook."""
import numpy as np
import pytest
import torch

from course_tools.grading.api import expect_close, task

TORCH_OPS = {
    "PowerScalar": lambda attrs, a: a ** attrs["scalar"],
    "EWiseDiv": lambda attrs, a, b: a / b,
    "DivScalar": lambda attrs, a: a / attrs["scalar"],
    "Negate": lambda attrs, a: -a,
    "Log": lambda attrs, a: torch.log(a),
    "Exp": lambda attrs, a: torch.exp(a),
    "ReLU": lambda attrs, a: torch.relu(a),
    "EWisePow": lambda attrs, a, b: a ** b,
    "Reshape": lambda attrs, a: a.reshape(attrs["shape"]),
    "BroadcastTo": lambda attrs, a: a.broadcast_to(attrs["shape"]),
    "Summation": lambda attrs, a: a.sum(dim=attrs["axes"]),
    "Transpose": lambda attrs, a: a.transpose(-1, -2),
    "MatMul": lambda attrs, a, b: a @ b,
}


def torch_gradients(op, attrs, arrays, out_grad):
    inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    TORCH_OPS[op](attrs, *inputs).backward(torch.tensor(out_grad))
    return [t.grad.numpy() for t in inputs]

CASES = [  # task, op, attrs, input shapes, positive inputs
    ("backward_power_scalar", "PowerScalar", {"scalar": 3}, [(3, 4)], False),
    ("backward_divide", "EWiseDiv", {}, [(3, 4), (3, 4)], True),
    ("backward_divide_scalar", "DivScalar", {"scalar": 4.0}, [(3, 4)], False),
    ("backward_negate", "Negate", {}, [(3, 4)], False),
    ("backward_log", "Log", {}, [(3, 4)], True),
    ("backward_exp", "Exp", {}, [(3, 4)], False),
    ("backward_relu", "ReLU", {}, [(3, 4)], False),
    ("backward_power", "EWisePow", {}, [(3, 4), (3, 4)], True),
    ("backward_reshape", "Reshape", {"shape": (4, 3)}, [(3, 4)], False),
    ("backward_broadcast_to", "BroadcastTo", {"shape": (2, 3, 4)}, [(3, 1)], False),
    ("backward_summation", "Summation", {"axes": (1,)}, [(3, 4)], False),
    ("backward_transpose", "Transpose", {"axes": None}, [(2, 3, 4)], False),
    ("backward_matmul", "MatMul", {}, [(2, 3, 4), (4, 5)], False),
]
OUT_SHAPES = {"Reshape": (4, 3), "BroadcastTo": (2, 3, 4), "Summation": (3,), "Transpose": (2, 4, 3),
              "MatMul": (2, 3, 5)}


# Two draws per op (weight 1 each, 2 per op as before): a diagnosis needs two inputs that agree.
@pytest.mark.parametrize("draw", [1, 2])
@pytest.mark.parametrize("case", [pytest.param(c, id=c[1], marks=task(c[0], weight=1)) for c in CASES])
def test_gradient_is_built_from_out_grad_with_ops(student, rng, case, draw):
    """the gradient is built from out_grad with ops (so gradients of gradients work)"""
    _, op, attrs, shapes, positive = case
    arrays = [rng.uniform(0.5, 2.0, s) if positive else rng.standard_normal(s) for s in shapes]
    out_shape = OUT_SHAPES.get(op, shapes[0])
    first, second = rng.standard_normal(out_shape), rng.standard_normal(out_shape)
    got = student.gradient(op, attrs, arrays, first, reevaluate=second)
    for i, (value, expected) in enumerate(zip(got["reevaluated"], torch_gradients(op, attrs, arrays, second))):
        try:
            expect_close(value, expected, f"{op}.gradient, input {i}, its graph evaluated again with a new out_grad",
                         rtol=1e-6, atol=1e-8)
        except AssertionError:
            if np.shape(value) == np.shape(got["grads"][i]) and np.allclose(value, got["grads"][i]):
                raise AssertionError(
                    f"{op}.gradient: the adjoint of input {i} is not connected to out_grad in the graph (evaluated "
                    f"again with another out_grad, it did not change); build it with ops on Tensors (out_grad * "
                    f"..., reshape, summation, ...), not from raw arrays or .numpy()/.cached_data values wrapped "
                    f"in a new Tensor") from None
            raise
