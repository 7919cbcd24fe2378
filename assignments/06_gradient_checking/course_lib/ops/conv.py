# Generated from course_lib/ops/conv.py for the release of 06_gradient_checking by `python -m course_tools.build` - do not edit.
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
from ..nd import NDArray, axis_slice
from ..parallel import batch_over_cores, pieces, run_in_blocks
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


# Pieces of a convolution's forward (Conv.evaluate): a column matrix up to this size stays in
# the processor's caches (1 to 8 MiB measured about equally good on the course's machine, 1 MiB
# of L2 a core and 32 MiB of L3); fewer rows than the minimum make the matrix multiply itself
# slow. Measured in benchmarks/README.md.
COLUMN_CACHE_BYTES = 4 << 20
MIN_PIECE_ROWS = 256


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

    def evaluate(self, a: NDArray, b: NDArray) -> NDArray:
        """Run ``compute`` (the im2col of assignment 04) on pieces whose column matrix fits in
        the processor's cache, when the whole one would not.

        The column matrix of a large batch (75 MiB for the input gradient of the benchmark's
        N=32, 32x32, 64-channel layer) is written to memory and read back by the matrix
        multiply; a piece of ``COLUMN_CACHE_BYTES`` is read back from cache, and the freed
        buffer is reused by the next piece. A convolution is separate in its batch (out[n]
        depends on a[n] only) and a sum over its input channels, so pieces are either images,
        written into their rows of the output, or channels (when one image's windows are too
        few rows to keep a matrix multiply efficient: the kernel gradient's conv, whose
        "images" are the C_in channels), added up. The pieces are shared out over the cores
        (``course_lib.parallel``): one thread each, with a single-threaded BLAS.
        """
        _check_conv_args(a.shape, b.shape, self.stride, self.padding, self.dilation, a.dtype, b.dtype)
        if not a.device.is_host or min(a.shape) == 0 or min(b.shape) == 0:
            # A GPU's matrix multiply is limited by launches, not by a cache: one piece.
            return self.compute(a, b)
        n, h, w, c_in = a.shape
        kh, kw, _, _ = b.shape
        s, p, d = self.stride, self.padding, self.dilation
        rows = conv_output_size(h, kh, s, p, d) * conv_output_size(w, kw, s, p, d)
        itemsize = a.handle.itemsize
        image_bytes = rows * kh * kw * c_in * itemsize  # one image's columns
        if n * image_bytes <= COLUMN_CACHE_BYTES:
            return self.compute(a, b)
        b = b.compact()  # compacted once, not once per piece
        if rows >= MIN_PIECE_ROWS:
            most = max(1, COLUMN_CACHE_BYTES // image_bytes)  # images a piece
            return batch_over_cores(n, lambda images: self.compute(
                axis_slice(a, 0, images.start, images.stop), b), most)
        channel_bytes = n * rows * kh * kw * itemsize  # one input channel's columns
        most = max(1, COLUMN_CACHE_BYTES // channel_bytes)  # channels a piece

        def channels(block: range):
            total = None
            for part in pieces(block, most):
                piece = self.compute(axis_slice(a, 3, part.start, part.stop),
                                     axis_slice(b, 2, part.start, part.stop))._view()
                if total is None:
                    total = piece.copy()
                else:
                    total += piece
            return total

        # Each core adds up its own consecutive channels; their sums are added in order, so the
        # result is the same on every run with the same number of cores.
        totals = run_in_blocks(c_in, channels)
        total = totals[0]
        for other in totals[1:]:
            total += other
        return NDArray._wrap(total, a.device)

    def gradient(self, out_grad: Tensor, node: Tensor):
        a, b = node.inputs
        s, p, d = self.stride, self.padding, self.dilation
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
        # by d. When the stride does not divide, the last rows of the padded input were under no
        # window: leave them out, or the result would have taps past the kernel's last one.
        unused_h = (h + 2 * p - d * (kh - 1) - 1) % s
        unused_w = (w + 2 * p - d * (kw - 1) - 1) % s
        a_used, p_used = a, p
        if unused_h or unused_w:
            # Pad the bottom and right by p - unused instead of p; if that is negative, crop.
            a_used = pad(a, ((0, 0), (p, max(p - unused_h, 0)), (p, max(p - unused_w, 0)), (0, 0)))
            if unused_h > p or unused_w > p:
                a_used = crop(a_used, ((0, 0), (0, max(unused_h - p, 0)), (0, max(unused_w - p, 0)), (0, 0)))
            p_used = 0
        a_t = transpose(a_used, (0, 3))
        grad_t = transpose(transpose(out_grad, (0, 1)), (1, 2))
        grad_b = conv(a_t, grad_t, stride=d, padding=p_used, dilation=s)  # (C_in, KH, KW, C_out)
        grad_b = transpose(transpose(grad_b, (0, 1)), (1, 2))    # (KH, KW, C_in, C_out)
        return grad_a, grad_b


def pad_hw(x: Tensor, ph: int, pw: int) -> Tensor:
    """Zero-pad axes 1 and 2 (H and W) of an NHWC tensor by ph and pw on both sides."""
    return pad(x, ((0, 0), (ph, ph), (pw, pw), (0, 0)))


def conv(a: Tensor, b: Tensor, stride: int = 1, padding: int = 0, dilation: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of NHWC ``a`` with a (KH, KW, C_in, C_out) kernel ``b``."""
    _check_conv_args(a.shape, b.shape, stride, padding, dilation, a.dtype, b.dtype)
    return Conv(stride, padding, dilation)(a, b)
