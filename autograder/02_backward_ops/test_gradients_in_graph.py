"""Hidden checks that each gradient is built from ops on Tensors, inside the graph.

A gradient computed outside the graph (raw arrays wrapped in a new Tensor) has the right
values but cannot be differentiated again: seed 003's third classic mistake."""
import numpy as np
import pytest

from course_tools.grading.suite import task

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


@pytest.mark.parametrize("case", [pytest.param(c, id=c[1], marks=task(c[0], weight=2)) for c in CASES])
def test_gradient_is_built_from_out_grad_with_ops(student, rng, case):
    """the gradient is built from out_grad with ops (so gradients of gradients work)"""
    _, op, attrs, shapes, positive = case
    arrays = [rng.uniform(0.5, 2.0, s) if positive else rng.standard_normal(s) for s in shapes]
    out_shape = OUT_SHAPES.get(op, shapes[0])
    connected = student.gradient(op, attrs, arrays, rng.standard_normal(out_shape), graph=True)
    for i, ok in enumerate(connected):
        assert ok, (f"{op}.gradient: the adjoint of input {i} is not connected to out_grad in the graph; "
                    f"build it with ops on Tensors (out_grad * ..., reshape, summation, ...), not from raw "
                    f"arrays or .numpy()/.cached_data values wrapped in a new Tensor")
