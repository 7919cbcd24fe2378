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
        ### BEGIN SOLUTION conv_im2col_forward
        if p > 0:
            a = a.pad(((0, 0), (p, p), (p, p), (0, 0)))
        a = a.compact()
        n, h, w, c_in = a.shape
        kh, kw, _, c_out = b.shape
        h_out = (h - d * (kh - 1) - 1) // s + 1
        w_out = (w - d * (kw - 1) - 1) // s + 1
        sn, sh, sw, sc = a.strides
        # Every window as one view: (N, H_out, W_out, KH, KW, C_in); no data is copied yet.
        windows = a.as_strided((n, h_out, w_out, kh, kw, c_in),
                               (sn, sh * s, sw * s, sh * d, sw * d, sc))
        columns = windows.compact().reshape((n * h_out * w_out, kh * kw * c_in))
        out = columns @ b.compact().reshape((kh * kw * c_in, c_out))
        return out.reshape((n, h_out, w_out, c_out))
        ### END SOLUTION conv_im2col_forward

    def gradient(self, out_grad: Tensor, node: Tensor):
        a, b = node.inputs
        s, p, d = self.stride, self.padding, self.dilation
        ### BEGIN SOLUTION conv_backward
        _, h, w, _ = a.shape
        kh, kw, _, _ = b.shape
        # The rows/cols a stride-1 conv would produce; stride s keeps every s-th of them.
        h1 = h + 2 * p - d * (kh - 1)
        w1 = w + 2 * p - d * (kw - 1)
        grad = out_grad
        if s > 1:
            # Put the strided outputs back where a stride-1 conv would have them, zeros between.
            grad = dilate(grad, (1, 2), s - 1)
            extra_h, extra_w = grad.shape[1] - h1, grad.shape[2] - w1
            if extra_h or extra_w:
                grad = crop(grad, ((0, 0), (0, extra_h), (0, extra_w), (0, 0)))
        # (N, H1, W1, C_out)

        # Input: full correlation of grad with the kernel rotated by 180 degrees, channels
        # swapped: (KH, KW, C_out, C_in). Padding d(K-1) - p; if p is larger, crop instead.
        b_rot = transpose(flip(b, (0, 1)), (2, 3))
        full_h, full_w = d * (kh - 1), d * (kw - 1)
        if full_h == full_w and full_h >= p:
            grad_a = conv(grad, b_rot, padding=full_h - p, dilation=d)
        else:
            grad_a = conv(pad_hw(grad, full_h, full_w), b_rot, dilation=d)
            grad_a = crop(grad_a, ((0, 0), (p, p), (p, p), (0, 0)))

        # Kernel: correlate the input with out_grad, summing over the batch by making the batch
        # the channel axis: a -> (C_in, H, W, N), out_grad -> (H_out, W_out, N, C_out). Output
        # (h, w) read the input at h*s + u*d: out_grad acts as a kernel spread out by the stride
        # (dilation s, the same as the dilated grad above without multiplying its zeros), moved
        # by d. A stride that does not divide leaves rows past the kernel's last tap: cropped.
        a_t = transpose(a, (0, 3))
        grad_t = transpose(transpose(out_grad, (0, 1)), (1, 2))
        grad_b = conv(a_t, grad_t, stride=d, padding=p, dilation=s)  # (C_in, >= KH, >= KW, C_out)
        extra_h, extra_w = grad_b.shape[1] - kh, grad_b.shape[2] - kw
        if extra_h or extra_w:
            grad_b = crop(grad_b, ((0, 0), (0, extra_h), (0, extra_w), (0, 0)))
        grad_b = transpose(transpose(grad_b, (0, 1)), (1, 2))    # (KH, KW, C_in, C_out)
        return grad_a, grad_b
        ### END SOLUTION conv_backward


def pad_hw(x: Tensor, ph: int, pw: int) -> Tensor:
    """Zero-pad axes 1 and 2 (H and W) of an NHWC tensor by ph and pw on both sides."""
    return pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))


def conv(a: Tensor, b: Tensor, stride: int = 1, padding: int = 0, dilation: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of NHWC ``a`` with a (KH, KW, C_in, C_out) kernel ``b``."""
    _check_conv_args(a.shape, b.shape, stride, padding, dilation, a.dtype, b.dtype)
    return Conv(stride, padding, dilation)(a, b)
