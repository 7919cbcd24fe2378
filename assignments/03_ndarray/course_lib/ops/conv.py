# Generated from course_lib/ops/conv.py for the release of 03_ndarray by `python -m course_tools.build` - do not edit.
"""2-D convolution on NHWC tensors (assignment 04).

    a: (N, H, W, C_in)            the input, channels last
    b: (KH, KW, C_in, C_out)      the kernel
    out: (N, H_out, W_out, C_out) with H_out = (H + 2p - d(KH - 1) - 1) // s + 1

As in every deep-learning framework, "convolution" here is a cross-correlation: the kernel is
not flipped in the forward pass:

    out[n, h, w, q] = sum_{i, j, c} pad(a)[n, h*s + i*d, w*s + j*d, c] * b[i, j, c, q]

Forward is im2col: one strided view of the padded input holds every window, one matrix
multiply applies the kernel to all of them. Backward is built from this same conv with flip,
dilate and transposes, so it is differentiable again.
"""
from __future__ import annotations

from ..autograd import Tensor, TensorOp
from ..nd import NDArray
from .flip_dilate import crop, dilate, flip, pad
from .shaping import transpose


def _check_conv_args(a_shape, b_shape, stride, padding, dilation, a_dtype=None, b_dtype=None):
    for name, value, low in (("stride", stride, 1), ("dilation", dilation, 1), ("padding", padding, 0)):
        if int(value) != value or value < low:
            raise ValueError(f"conv: {name} must be an integer >= {low}, got {value!r}")
    if len(a_shape) != 4 or len(b_shape) != 4:
        raise ValueError(f"conv: input must be (N, H, W, C_in) and kernel (KH, KW, C_in, C_out); "
                         f"got shapes {a_shape} and {b_shape}")
    if a_shape[3] != b_shape[2]:
        raise ValueError(f"conv: input has {a_shape[3]} channels (shape {a_shape}) but the kernel expects "
                         f"{b_shape[2]} (shape {b_shape})")
    for axis, (n, k) in enumerate(zip(a_shape[1:3], b_shape[:2])):
        span = dilation * (k - 1) + 1
        if span > n + 2 * padding:
            raise ValueError(f"conv: kernel {b_shape[:2]} with dilation {dilation} spans {span} along "
                             f"axis {axis + 1}, more than the padded input ({n} + 2*{padding})")
    if a_dtype is not None and a_dtype != b_dtype:
        raise TypeError(f"conv: input dtype {a_dtype} and kernel dtype {b_dtype} differ")


def conv_output_size(n: int, k: int, stride: int, padding: int, dilation: int) -> int:
    """H_out = (H + 2p - d(K - 1) - 1) // s + 1."""
    return (n + 2 * padding - dilation * (k - 1) - 1) // stride + 1


class Conv(TensorOp):
    """out = conv(a, b): a (N, H, W, C_in), b (KH, KW, C_in, C_out) -> (N, H_out, W_out, C_out)."""

    def __init__(self, stride: int = 1, padding: int = 0, dilation: int = 1):
        self.stride = stride
        self.padding = padding
        self.dilation = dilation

    def compute(self, a: NDArray, b: NDArray) -> NDArray:
        _check_conv_args(a.shape, b.shape, self.stride, self.padding, self.dilation, a.dtype, b.dtype)
        s, p, d = self.stride, self.padding, self.dilation
        raise NotImplementedError("conv_im2col_forward: not implemented yet; you write it in assignment 04_conv_backward")

    def gradient(self, out_grad: Tensor, node: Tensor):
        a, b = node.inputs
        s, p, d = self.stride, self.padding, self.dilation
        raise NotImplementedError("conv_backward: not implemented yet; you write it in assignment 04_conv_backward")


def pad_hw(x: Tensor, ph: int, pw: int) -> Tensor:
    """Zero-pad axes 1 and 2 (H and W) of an NHWC tensor by ph and pw on both sides."""
    return pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))


def conv(a: Tensor, b: Tensor, stride: int = 1, padding: int = 0, dilation: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of NHWC ``a`` with a (KH, KW, C_in, C_out) kernel ``b``."""
    _check_conv_args(a.shape, b.shape, stride, padding, dilation, a.dtype, b.dtype)
    return Conv(stride, padding, dilation)(a, b)
