"""Layers: modules that hold parameters and build graphs of ops.

Image layers take NCHW input, like PyTorch's; inside, convolution and pooling run on NHWC.
"""
from __future__ import annotations

from typing import Iterator

from . import init, nd, ops
from .autograd import Tensor
from .backend import Device


class Parameter(Tensor):
    """A tensor that a Module learns."""


def _collect(value) -> Iterator:
    if isinstance(value, Parameter):
        yield value
    elif isinstance(value, Module):
        yield from value.parameters()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _collect(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _collect(item)


def _children(value) -> Iterator["Module"]:
    if isinstance(value, Module):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _children(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _children(item)


class Module:
    """Base class: ``__call__`` runs ``forward``; ``parameters()`` finds every Parameter inside."""

    def __init__(self):
        self.training = True

    def parameters(self) -> list[Parameter]:
        seen, out = set(), []
        for p in _collect(list(self.__dict__.values())):
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
        return out

    def children(self) -> list["Module"]:
        return list(_children(list(self.__dict__.values())))

    def train(self) -> "Module":
        self.training = True
        for child in self.children():
            child.train()
        return self

    def eval(self) -> "Module":
        self.training = False
        for child in self.children():
            child.eval()
        return self

    def forward(self, *args):
        raise NotImplementedError

    def __call__(self, *args):
        return self.forward(*args)


class Identity(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


class Linear(Module):
    """y = x @ W + b.  x: (N, in_features) -> (N, out_features); W: (in, out), b: (1, out)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Device | None = None, dtype="float32"):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(init.kaiming_uniform(in_features, out_features, device=device, dtype=dtype))
        self.bias = None
        if bias:
            # fan_in of the bias "layer" is out_features, as in needle
            self.bias = Parameter(init.kaiming_uniform(out_features, 1, shape=(1, out_features),
                                                       device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.in_features:
            raise ValueError(f"Linear({self.in_features}, {self.out_features}) got input of shape {x.shape}")
        y = x @ self.weight
        if self.bias is not None:
            y = y + ops.broadcast_to(self.bias, y.shape)
        return y


class ReLU(Module):
    def forward(self, x: Tensor) -> Tensor:
        return ops.relu(x)


class Tanh(Module):
    def forward(self, x: Tensor) -> Tensor:
        return ops.tanh(x)


class Flatten(Module):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...)."""

    def forward(self, x: Tensor) -> Tensor:
        n = x.shape[0]
        return ops.reshape(x, (n, nd.prod(x.shape[1:])))


class Sequential(Module):
    def __init__(self, *modules: Module):
        super().__init__()
        self.modules = list(modules)

    def forward(self, x: Tensor) -> Tensor:
        for module in self.modules:
            x = module(x)
        return x


def one_hot(labels: Tensor, num_classes: int, dtype="float32") -> Tensor:
    """Integer labels (N,) -> (N, num_classes) rows of 0 with one 1; a constant tensor."""
    y = labels.realize_cached_data()
    n = y.shape[0]
    classes = nd.arange(num_classes, dtype=y.dtype, device=y.device).reshape((1, num_classes))
    hot = classes.broadcast_to((n, num_classes)) == y.compact().reshape((n, 1)).broadcast_to((n, num_classes))
    return Tensor(hot.astype(dtype), requires_grad=False)


def softmax_loss(logits: Tensor, y_one_hot: Tensor) -> Tensor:
    """Mean cross-entropy of softmax(logits) against one-hot targets.

    logits: (N, K); y_one_hot: (N, K) -> scalar ()
    loss = mean_i [ logsumexp_k(logits[i]) - logits[i, y_i] ]
    """
    if logits.shape != y_one_hot.shape:
        raise ValueError(f"softmax_loss: logits {logits.shape} and one-hot targets {y_one_hot.shape} differ")
    ### BEGIN SOLUTION softmax_loss
    n = logits.shape[0]
    normaliser = ops.logsumexp(logits, axes=(1,))
    picked = ops.summation(logits * y_one_hot, axes=(1,))
    return ops.summation(normaliser - picked) / n
    ### END SOLUTION softmax_loss


class SoftmaxLoss(Module):
    """loss(logits (N, K), labels (N,) of ints) -> the mean softmax cross-entropy, a scalar."""

    def forward(self, logits: Tensor, labels: Tensor) -> Tensor:
        if len(logits.shape) != 2 or labels.shape != (logits.shape[0],):
            raise ValueError(f"SoftmaxLoss expects logits (N, K) and labels (N,), got {logits.shape} "
                             f"and {labels.shape}")
        return softmax_loss(logits, one_hot(labels, logits.shape[1], dtype=logits.dtype))


def nchw_to_nhwc(x: Tensor) -> Tensor:
    return ops.transpose(ops.transpose(x, (1, 2)), (2, 3))


def nhwc_to_nchw(x: Tensor) -> Tensor:
    return ops.transpose(ops.transpose(x, (2, 3)), (1, 2))


def _square_kernel_size(kernel_size) -> int:
    """k from ``k`` or ``(k, k)``; a ValueError for a rectangular kernel, which nn.Conv lacks."""
    if isinstance(kernel_size, (tuple, list)):
        if len(kernel_size) != 2 or kernel_size[0] != kernel_size[1]:
            raise ValueError(f"nn.Conv supports square kernels only (k or (k, k)), got kernel_size={kernel_size!r}")
        kernel_size = kernel_size[0]
    if int(kernel_size) != kernel_size or kernel_size < 1:
        raise ValueError(f"nn.Conv needs a positive integer kernel_size, got {kernel_size!r}")
    return int(kernel_size)


class Conv(Module):
    """2-D convolution with "same" padding k // 2, over a square k x k kernel.

    x: (N, C_in, H, W) -> (N, C_out, H_out, W_out), H_out = (H + 2(k//2) - k) // stride + 1.
    weight: (k, k, C_in, C_out), Kaiming-uniform with fan_in = C_in*k*k; bias: (C_out,).
    kernel_size: k or (k, k); a rectangular (kh, kw) is a ValueError.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride: int = 1,
                 bias: bool = True, device: Device | None = None, dtype="float32"):
        super().__init__()
        kernel_size = _square_kernel_size(kernel_size)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = kernel_size, stride
        fan_in = in_channels * kernel_size * kernel_size
        fan_out = out_channels * kernel_size * kernel_size
        self.weight = Parameter(init.kaiming_uniform(
            fan_in, fan_out, shape=(kernel_size, kernel_size, in_channels, out_channels),
            device=device, dtype=dtype))
        self.bias = None
        if bias:
            bound = 1.0 / fan_in ** 0.5
            self.bias = Parameter(init.rand(out_channels, low=-bound, high=bound, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        if len(x.shape) != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"Conv({self.in_channels}, {self.out_channels}) expects (N, {self.in_channels}, H, W), "
                             f"got {x.shape}")
        ### BEGIN SOLUTION nn_conv
        out = ops.conv(nchw_to_nhwc(x), self.weight, stride=self.stride, padding=self.kernel_size // 2)
        if self.bias is not None:
            out = out + ops.broadcast_to(ops.reshape(self.bias, (1, 1, 1, self.out_channels)), out.shape)
        return nhwc_to_nchw(out)
        ### END SOLUTION nn_conv


class _Pool2d(Module):
    pool = None  # the NHWC op

    def __init__(self, kernel_size: int, stride=None, padding: int = 0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor) -> Tensor:
        return nhwc_to_nchw(self.pool(nchw_to_nhwc(x), self.kernel_size, self.stride, self.padding))


class MaxPool2d(_Pool2d):
    """x: (N, C, H, W) -> (N, C, H_out, W_out); ties go to the first maximum (row-major)."""
    pool = staticmethod(ops.max_pool2d)


class AvgPool2d(_Pool2d):
    """x: (N, C, H, W) -> (N, C, H_out, W_out); padded zeros count in the average."""
    pool = staticmethod(ops.avg_pool2d)
