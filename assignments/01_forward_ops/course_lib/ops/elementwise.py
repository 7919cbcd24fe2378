# Generated from course_lib/ops/elementwise.py for the release of 01_forward_ops by `python -m course_tools.build` - do not edit.
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
        raise NotImplementedError("forward_power: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_power: not implemented yet; you write it in assignment 02_backward_ops")


def power(a: Tensor, b: Tensor) -> Tensor:
    return EWisePow()(a, b)


class PowerScalar(TensorOp):
    """a ** scalar elementwise, for a number ``scalar`` (an integer in the course's tests)."""

    def __init__(self, scalar):
        self.scalar = scalar

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("forward_power_scalar: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_power_scalar: not implemented yet; you write it in assignment 02_backward_ops")


def power_scalar(a: Tensor, scalar) -> Tensor:
    return PowerScalar(scalar)(a)


class EWiseDiv(TensorOp):
    """a / b elementwise (true division)."""

    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        raise NotImplementedError("forward_divide: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_divide: not implemented yet; you write it in assignment 02_backward_ops")


def divide(a: Tensor, b: Tensor) -> Tensor:
    return EWiseDiv()(a, b)


class DivScalar(TensorOp):
    """a / scalar elementwise."""

    def __init__(self, scalar):
        self.scalar = scalar

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("forward_divide_scalar: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_divide_scalar: not implemented yet; you write it in assignment 02_backward_ops")


def divide_scalar(a: Tensor, scalar) -> Tensor:
    return DivScalar(scalar)(a)


class Negate(TensorOp):
    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("forward_negate: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_negate: not implemented yet; you write it in assignment 02_backward_ops")


def negate(a: Tensor) -> Tensor:
    return Negate()(a)


class Log(TensorOp):
    """Natural logarithm."""

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("forward_log: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_log: not implemented yet; you write it in assignment 02_backward_ops")


def log(a: Tensor) -> Tensor:
    return Log()(a)


class Exp(TensorOp):
    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("forward_exp: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_exp: not implemented yet; you write it in assignment 02_backward_ops")


def exp(a: Tensor) -> Tensor:
    return Exp()(a)


class ReLU(TensorOp):
    """max(a, 0). Its gradient at exactly 0 is taken as 0 (as PyTorch does)."""

    def compute(self, a: NDArray) -> NDArray:
        raise NotImplementedError("forward_relu: not implemented yet; you write it in assignment 01_forward_ops")

    def gradient(self, out_grad: Tensor, node: Tensor):
        raise NotImplementedError("backward_relu: not implemented yet; you write it in assignment 02_backward_ops")


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
