"""Elementwise ops forward and backward vs PyTorch (float64, float32) and finite differences."""
import pytest
import torch

from course_lib import ops
from conftest import (ORACLE_DTYPES, OpCase, away_from_zero, case_params, check_case_against_torch,
                      check_case_finite_differences, check_second_order_against_torch, normal, positive, tensor)

SHAPES = [(5,), (3, 4), (2, 3, 4)]

CASES = [case for shape in SHAPES for case in [
    OpCase("add", ops.add, torch.add, (shape, shape)),
    OpCase("add_scalar", lambda a: ops.add_scalar(a, 1.5), lambda a: a + 1.5, (shape,)),
    OpCase("multiply", ops.multiply, torch.mul, (shape, shape)),
    OpCase("mul_scalar", lambda a: ops.mul_scalar(a, -2.5), lambda a: a * -2.5, (shape,)),
    OpCase("power", ops.power, torch.pow, (shape, shape), make=(positive, normal)),
    OpCase("power_scalar_2", lambda a: ops.power_scalar(a, 2), lambda a: a ** 2, (shape,)),
    OpCase("power_scalar_3", lambda a: ops.power_scalar(a, 3), lambda a: a ** 3, (shape,)),
    OpCase("power_scalar_-1", lambda a: ops.power_scalar(a, -1), lambda a: a ** -1, (shape,),
           make=away_from_zero),
    OpCase("power_scalar_0.5", lambda a: ops.power_scalar(a, 0.5), lambda a: a ** 0.5, (shape,),
           make=positive),
    OpCase("divide", ops.divide, torch.div, (shape, shape), make=(normal, away_from_zero)),
    OpCase("divide_scalar", lambda a: ops.divide_scalar(a, 4.0), lambda a: a / 4.0, (shape,)),
    OpCase("negate", ops.negate, torch.neg, (shape,)),
    OpCase("log", ops.log, torch.log, (shape,), make=positive),
    OpCase("exp", ops.exp, torch.exp, (shape,)),
    OpCase("relu", ops.relu, torch.relu, (shape,), make=away_from_zero),
    OpCase("tanh", ops.tanh, torch.tanh, (shape,)),
]]

# Several ops in one graph, so adjoints of different ops meet and add up.
COMPOSED = [
    OpCase("exp-log-tanh", lambda a, b: ops.tanh(ops.exp(a) * ops.log(b) - a / b),
           lambda a, b: torch.tanh(torch.exp(a) * torch.log(b) - a / b), ((3, 4), (3, 4)),
           make=(normal, positive)),
    OpCase("relu-power-reuse", lambda a, b: ops.relu(a) * a ** b + ops.negate(a),
           lambda a, b: torch.relu(a) * a ** b - a, ((2, 5), (2, 5)), make=(positive, normal)),
]


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
@pytest.mark.parametrize("case", case_params(CASES + COMPOSED))
def test_matches_torch(device, rng, case, dtype):
    check_case_against_torch(case, dtype, device, rng)


@pytest.mark.parametrize("case", case_params(CASES + COMPOSED))
def test_gradient_matches_finite_differences(device, rng, case):
    check_case_finite_differences(case, device, rng)


@pytest.mark.parametrize("case", case_params(CASES + COMPOSED))
def test_gradient_of_gradient_matches_torch(device, rng, case):
    check_second_order_against_torch(case.ours, case.theirs, case.arrays(rng), "float64", device, rng)


def test_relu_gradient_at_zero_is_zero(device):
    x = tensor([-1.0, 0.0, 2.0], device)
    ops.relu(x).backward(tensor([1.0, 1.0, 1.0], device, requires_grad=False))
    assert x.grad.numpy().tolist() == [0.0, 0.0, 1.0]
