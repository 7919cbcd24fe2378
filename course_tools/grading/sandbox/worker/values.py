"""Values across the worker's boundary: what a request brings (arrays, or ``StridedView``s the
grader made non-compact) as the student's objects (NumPy arrays, NDArrays, Tensors), and what
the student's code returned as values the protocol carries back (numbers, strings, arrays, and
lists and dicts of them).
"""
from __future__ import annotations

import numpy as np

from .protocol import MAX_DEPTH, StridedView

PLAIN = (bool, int, float, str, type(None))


# ------------------------------------------------------------------------------- values in
def host(value) -> np.ndarray:
    """A NumPy array (a view, for a StridedView) of an input value."""
    if isinstance(value, StridedView):
        buffer, itemsize = value.buffer.reshape(-1), value.buffer.itemsize
        if buffer.size == 0:
            return np.empty(value.shape, dtype=buffer.dtype)
        return np.lib.stride_tricks.as_strided(buffer[value.offset:], shape=value.shape,
                                               strides=tuple(s * itemsize for s in value.strides))
    return value


def nd_array(value):
    """An NDArray of an input value: a compact copy, or a strided view for a StridedView."""
    from course_lib import nd

    if isinstance(value, StridedView):
        return nd.NDArray.make(value.shape, strides=value.strides, handle=np.array(value.buffer.reshape(-1)),
                               offset=value.offset, device=nd.cpu())
    return nd.array(value, dtype=str(value.dtype))


def tensor(value, requires_grad: bool = True):
    from course_lib import nd
    from course_lib.autograd import Tensor

    data = nd_array(value)
    return Tensor.make_const(data, requires_grad=requires_grad and data.dtype in nd.SUPPORTED_FLOAT_DTYPES)


# ------------------------------------------------------------------------------- values out
def to_numpy(value, what: str) -> np.ndarray:
    """What the student's code returned, as a NumPy array: course_lib's one conversion
    (course_lib.host), accepting only course_lib's arrays and NumPy arrays."""
    from course_lib.host import to_numpy as host_to_numpy

    return host_to_numpy(value, what, arrays_only=True)


def plain(value, where: str, depth: int = 0):
    """Numbers, strings, arrays, lists and dicts of them, as they may cross to the grader (nested
    at most protocol.MAX_DEPTH levels: a deeper value is refused here, saying so)."""
    if isinstance(value, PLAIN):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if type(value) is np.ndarray:
        return value
    if isinstance(value, (list, tuple, dict)) and depth >= MAX_DEPTH:
        raise TypeError(f"{where} is nested more than {MAX_DEPTH} levels deep; the grader reads lists and dicts "
                        f"of at most {MAX_DEPTH} levels")
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): plain(v, f"{where}[{k!r}]", depth + 1) for k, v in value.items()}
    try:
        return to_numpy(value, where)
    except TypeError:
        raise TypeError(f"{where} is a {type(value).__name__}; expected numbers, arrays, lists or dicts") from None




