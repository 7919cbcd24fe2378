# Generated from course_lib/ops/pooling.py for the release of 03_ndarray by `python -m course_tools.build` - do not edit.
"""Max and average pooling on NHWC tensors (assignment 05).

    a: (N, H, W, C) -> (N, H_out, W_out, C),  H_out = (H + 2p - k) // s + 1   (stride s defaults to k)

Windows may overlap (s < k): then one input element belongs to several windows and its
gradient is the sum of what each window sends it.

Max pooling sends each window's gradient to the window's maximum. When several elements tie
for the maximum, the *first* in row-major window order (top row first, left to right) gets
the whole gradient, as PyTorch does. Backward recomputes that same choice from the forward's
input, so forward and backward always agree on the position.

Average pooling counts padded zeros in the average (PyTorch's ``count_include_pad=True``):
every element of a window gets 1 / k**2 of the window's gradient.
"""
from __future__ import annotations

from .. import nd
from ..autograd import Tensor, TensorOp
from ..nd import NDArray
from ..parallel import slices_over_cores

# Pooling treats each image on its own: on the host, a batch of at least this many bytes is
# shared out over the cores (course_lib.parallel); on less, a thread costs more than it saves.
PARALLEL_MIN_BYTES = 1 << 20


def _pool_geometry(shape, kernel_size, stride, padding):
    if len(shape) != 4:
        raise ValueError(f"pooling expects an (N, H, W, C) input, got shape {shape}")
    k = int(kernel_size)
    s = k if stride is None else int(stride)
    p = int(padding)
    if k < 1 or s < 1 or p < 0:
        raise ValueError(f"pooling: kernel_size and stride must be >= 1 and padding >= 0, "
                         f"got kernel_size={kernel_size}, stride={stride}, padding={padding}")
    if 2 * p > k:
        raise ValueError(f"pooling: padding {p} must be at most half the kernel size {k}")
    n, h, w, c = shape
    if h + 2 * p < k or w + 2 * p < k:
        raise ValueError(f"pooling: kernel {k} is larger than the padded input {shape[1:3]} + 2*{p}")
    return k, s, p, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1


def _windows(x: NDArray, k: int, s: int, p: int, fill: float) -> NDArray:
    """Every pooling window of x: (N, H, W, C) -> (N, H_out, W_out, k*k, C), padded with ``fill``."""
    if p > 0:
        x = x.pad(((0, 0), (p, p), (p, p), (0, 0)), value=fill)
    x = x.compact()
    n, h, w, c = x.shape
    h_out, w_out = (h - k) // s + 1, (w - k) // s + 1
    sn, sh, sw, sc = x.strides
    view = x.as_strided((n, h_out, w_out, k, k, c), (sn, sh * s, sw * s, sh, sw, sc))
    return view.compact().reshape((n, h_out, w_out, k * k, c))


class Col2Im(TensorOp):
    """The adjoint of ``_windows``: add every window's values back onto the input positions they
    came from, then crop the padding. columns: (N, H_out, W_out, k*k, C) -> in_shape (N, H, W, C).

    An input position covered by several (overlapping) windows receives the sum of what each
    window holds for it; a padded position belongs to no input element and is dropped.
    """

    def __init__(self, in_shape, kernel_size: int, stride=None, padding: int = 0):
        self.in_shape = tuple(in_shape)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, columns: NDArray) -> NDArray:
        k, s, p, h_out, w_out = _pool_geometry(self.in_shape, self.kernel_size, self.stride, self.padding)
        n, h, w, c = self.in_shape
        if tuple(columns.shape) != (n, h_out, w_out, k * k, c):
            raise ValueError(f"Col2Im: columns of shape {columns.shape} do not fit the windows "
                             f"{(n, h_out, w_out, k * k, c)} of an input {self.in_shape} (kernel {k}, "
                             f"stride {s}, padding {p})")
        raise NotImplementedError("pool_col2im: not implemented yet; you write it in assignment 05_pooling_backward")

    def gradient(self, out_grad: Tensor, node: Tensor):
        return Im2Col(self.in_shape, self.kernel_size, self.stride, self.padding)(out_grad)


class Im2Col(TensorOp):
    """Every pooling window of x, zero-padded: (N, H, W, C) -> (N, H_out, W_out, k*k, C); the adjoint
    of Col2Im (so each is the other's gradient)."""

    def __init__(self, in_shape, kernel_size: int, stride=None, padding: int = 0):
        self.in_shape = tuple(in_shape)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, x: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(x.shape, self.kernel_size, self.stride, self.padding)
        return _windows(x, k, s, p, 0.0)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return Col2Im(self.in_shape, self.kernel_size, self.stride, self.padding)(out_grad)


class FirstMaxMask(TensorOp):
    """1.0 at the first maximum of each window (row-major window order: top row first, left to
    right), 0.0 elsewhere: a (N, H, W, C) -> (N, H_out, W_out, k*k, C), in a's dtype. Windows are
    padded with -inf, so padding is never chosen. Piecewise constant in a: its gradient is 0."""

    def __init__(self, kernel_size: int, stride=None, padding: int = 0):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, a: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
        raise NotImplementedError("maxpool_mask: not implemented yet; you write it in assignment 05_pooling_backward")

    def gradient(self, out_grad: Tensor, node: Tensor):
        a = node.inputs[0]
        return Tensor(nd.zeros(a.shape, dtype=a.dtype, device=a.device), requires_grad=False)


def _col2im(columns: NDArray, in_shape, k: int, s: int, p: int) -> NDArray:
    """Col2Im(in_shape, k, s, p).compute(columns): the windows added back onto the input."""
    return Col2Im(in_shape, k, s, p).compute(columns)


def _first_max_mask(a: NDArray, k: int, s: int, p: int) -> NDArray:
    """FirstMaxMask(k, s, p).compute(a): 1.0 at each window's first maximum, 0.0 elsewhere."""
    return FirstMaxMask(k, s, p).compute(a)


class MaxPool2d(TensorOp):
    def __init__(self, kernel_size: int, stride=None, padding: int = 0):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, a: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
        raise NotImplementedError("maxpool_forward: not implemented yet; you write it in assignment 05_pooling_backward")

    def evaluate(self, a: NDArray) -> NDArray:
        return slices_over_cores(self.compute, a, min_bytes=PARALLEL_MIN_BYTES)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return MaxPool2dBackward(self.kernel_size, self.stride, self.padding)(out_grad, node.inputs[0])


def max_pool2d(a: Tensor, kernel_size: int, stride=None, padding: int = 0) -> Tensor:
    """Max pooling of NHWC ``a`` with a square window; ties go to the first maximum."""
    _pool_geometry(a.shape, kernel_size, stride, padding)
    return MaxPool2d(kernel_size, stride, padding)(a)


class MaxPool2dBackward(TensorOp):
    """Inputs (out_grad, a): scatter each window's gradient onto the first maximum of ``a``."""

    def __init__(self, kernel_size, stride, padding):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, out_grad: NDArray, a: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
        raise NotImplementedError("maxpool_backward: not implemented yet; you write it in assignment 05_pooling_backward")

    def evaluate(self, out_grad: NDArray, a: NDArray) -> NDArray:
        return slices_over_cores(self.compute, out_grad, a, min_bytes=PARALLEL_MIN_BYTES)

    def gradient(self, out_grad: Tensor, node: Tensor):
        # Linear in the incoming gradient; the positions (from ``a``) are piecewise constant.
        g, a = node.inputs
        return (MaxPoolSelect(self.kernel_size, self.stride, self.padding)(out_grad, a),
                Tensor(nd.zeros(a.shape, dtype=a.dtype, device=a.device), requires_grad=False))


class MaxPoolSelect(TensorOp):
    """Inputs (x, a): read x at the positions where max pooling of ``a`` found its maxima.
    The adjoint of MaxPool2dBackward; it makes max pooling twice differentiable."""

    def __init__(self, kernel_size, stride, padding):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, x: NDArray, a: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
        return (_windows(x, k, s, p, 0.0) * _first_max_mask(a, k, s, p)).sum(axis=3)

    def gradient(self, out_grad: Tensor, node: Tensor):
        x, a = node.inputs
        return (MaxPool2dBackward(self.kernel_size, self.stride, self.padding)(out_grad, a),
                Tensor(nd.zeros(a.shape, dtype=a.dtype, device=a.device), requires_grad=False))


class AvgPool2d(TensorOp):
    def __init__(self, kernel_size: int, stride=None, padding: int = 0):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def compute(self, a: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(a.shape, self.kernel_size, self.stride, self.padding)
        raise NotImplementedError("avgpool_forward: not implemented yet; you write it in assignment 05_pooling_backward")

    def evaluate(self, a: NDArray) -> NDArray:
        return slices_over_cores(self.compute, a, min_bytes=PARALLEL_MIN_BYTES)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return AvgPool2dBackward(self.kernel_size, self.stride, self.padding, node.inputs[0].shape)(out_grad)


def avg_pool2d(a: Tensor, kernel_size: int, stride=None, padding: int = 0) -> Tensor:
    """Average pooling of NHWC ``a`` with a square window (padded zeros are counted)."""
    _pool_geometry(a.shape, kernel_size, stride, padding)
    return AvgPool2d(kernel_size, stride, padding)(a)


class AvgPool2dBackward(TensorOp):
    """out_grad (N, H_out, W_out, C) -> gradient of the input (N, H, W, C)."""

    def __init__(self, kernel_size, stride, padding, in_shape):
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.in_shape = tuple(in_shape)

    def compute(self, out_grad: NDArray) -> NDArray:
        k, s, p, _, _ = _pool_geometry(self.in_shape, self.kernel_size, self.stride, self.padding)
        raise NotImplementedError("avgpool_backward: not implemented yet; you write it in assignment 05_pooling_backward")

    def evaluate(self, out_grad: NDArray) -> NDArray:
        if out_grad.ndim != 4 or out_grad.shape[0] != self.in_shape[0]:
            return self.compute(out_grad)  # its error names the shapes

        def images(out_grad_piece: NDArray) -> NDArray:  # the same op on fewer images
            in_shape = (out_grad_piece.shape[0],) + self.in_shape[1:]
            return AvgPool2dBackward(self.kernel_size, self.stride, self.padding, in_shape).compute(out_grad_piece)

        return slices_over_cores(images, out_grad, min_bytes=PARALLEL_MIN_BYTES)

    def gradient(self, out_grad: Tensor, node: Tensor):
        return avg_pool2d(out_grad, self.kernel_size, self.stride, self.padding)
