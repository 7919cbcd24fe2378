# Generated from course_lib/ops/elementwise.py for the release of 04_conv_backward by `python -m course_tools.build` - do not edit.
"""Elementwise ops: each output element depends on the same element of each input.

Assignment 01 writes their ``compute``; assignment 02 their ``gradient``.
Shapes: every input and the output have the same shape (broadcast explicitly first).
"""
from __future__ import annotations

from ..autograd import Tensor, TensorOp
from ..nd import NDArray


class EWiseAdd(TensorOp):
    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        return a + b

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad, out_grad


def add(a: Tensor, b: Tensor) -> Tensor:
    return EWiseAdd()(a, b)


class AddScalar(TensorOp):
    def __init__(self, scalar):
        self.scalar = scalar

    def compute(self, a: NDArray) -> NDArray:
        return a + self.scalar

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad


def add_scalar(a: Tensor, scalar) -> Tensor:
    return AddScalar(scalar)(a)


class EWiseMul(TensorOp):
    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        return a * b

    def gradient(self, out_grad: Tensor, node: Tensor):
        lhs, rhs = node.inputs
        return out_grad * rhs, out_grad * lhs


def multiply(a: Tensor, b: Tensor) -> Tensor:
    return EWiseMul()(a, b)


class MulScalar(TensorOp):
    def __init__(self, scalar):
        self.scalar = scalar

    def compute(self, a: NDArray) -> NDArray:
        return a * self.scalar

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad * self.scalar


def mul_scalar(a: Tensor, scalar) -> Tensor:
    return MulScalar(scalar)(a)


class EWisePow(TensorOp):
    """a ** b elementwise, both tensors (a > 0 where b is not an integer)."""

    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        return a ** b

    def gradient(self, out_grad: Tensor, node: Tensor):
        a, b = node.inputs
        # d(a^b)/da = b a^(b-1);  d(a^b)/db = a^b log(a)
        return out_grad * b * a ** (b - 1), out_grad * node * log(a)


def power(a: Tensor, b: Tensor) -> Tensor:
    return EWisePow()(a, b)


class PowerScalar(TensorOp):
    """a ** scalar elementwise, for a number ``scalar`` (an integer in the course's tests)."""

    def __init__(self, scalar):
        self.scalar = scalar

    def compute(self, a: NDArray) -> NDArray:
        return a ** self.scalar

    def gradient(self, out_grad: Tensor, node: Tensor):
        a = node.inputs[0]
        return out_grad * self.scalar * a ** (self.scalar - 1)


def power_scalar(a: Tensor, scalar) -> Tensor:
    return PowerScalar(scalar)(a)


class EWiseDiv(TensorOp):
    """a / b elementwise (true division)."""

    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        return a / b

    def gradient(self, out_grad: Tensor, node: Tensor):
        a, b = node.inputs
        return out_grad / b, -out_grad * a / (b * b)


def divide(a: Tensor, b: Tensor) -> Tensor:
    return EWiseDiv()(a, b)


class DivScalar(TensorOp):
    """a / scalar elementwise."""

    def __init__(self, scalar):
        self.scalar = scalar

    def compute(self, a: NDArray) -> NDArray:
        return a / self.scalar

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad / self.scalar


def divide_scalar(a: Tensor, scalar) -> Tensor:
    return DivScalar(scalar)(a)


class Negate(TensorOp):
    def compute(self, a: NDArray) -> NDArray:
        return -a

    def gradient(self, out_grad: Tensor, node: Tensor):
        return -out_grad


def negate(a: Tensor) -> Tensor:
    return Negate()(a)


class Log(TensorOp):
    """Natural logarithm."""

    def compute(self, a: NDArray) -> NDArray:
        return a.log()

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad / node.inputs[0]


def log(a: Tensor) -> Tensor:
    return Log()(a)


class Exp(TensorOp):
    def compute(self, a: NDArray) -> NDArray:
        return a.exp()

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad * node


def exp(a: Tensor) -> Tensor:
    return Exp()(a)


class ReLU(TensorOp):
    """max(a, 0). Its gradient at exactly 0 is taken as 0 (as PyTorch does)."""

    def compute(self, a: NDArray) -> NDArray:
        return a.maximum(0)

    def gradient(self, out_grad: Tensor, node: Tensor):
        # The mask is a constant: relu is piecewise linear, its second derivative is 0.
        mask = Tensor(node.inputs[0].realize_cached_data() > 0, requires_grad=False)
        return out_grad * mask


def relu(a: Tensor) -> Tensor:
    return ReLU()(a)


class Tanh(TensorOp):
    def compute(self, a: NDArray) -> NDArray:
        return a.tanh()

    def gradient(self, out_grad: Tensor, node: Tensor):
        return out_grad * (1 - node ** 2)


def tanh(a: Tensor) -> Tensor:
    return Tanh()(a)


class Cast(TensorOp):
    """a converted to ``dtype``, inside the graph: its gradient converts ``out_grad`` back to a's
    dtype. Mixed precision uses it to compute the loss in float32 from float16 logits (and the
    float32 gradient of the loss goes back into the float16 network as float16)."""

    def __init__(self, dtype):
        self.dtype = str(dtype)

    def compute(self, a: NDArray) -> NDArray:
        return a.astype(self.dtype)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return cast(out_grad, node.inputs[0].dtype)


def cast(a: Tensor, dtype) -> Tensor:
    """``a`` in ``dtype``, differentiably (a Tensor's own ``astype`` leaves the graph)."""
    return a if str(a.dtype) == str(dtype) else Cast(dtype)(a)
