# Generated from course_lib/host.py for the release of 07_experiments by `python -m course_tools.build` - do not edit.
"""The one conversion to NumPy: what checks, gradient checking, figures, the tests and the
grader compare is always a NumPy array in host memory, obtained here.

A Tensor or NDArray is copied to the host by its device (``NDArray.numpy()``: an explicit
copy from a GPU, since CuPy refuses implicit ones); a bare CuPy array with ``.get()``; a torch
tensor (the tests' and the grader's oracle) with ``.detach().cpu().numpy()``. Neither CuPy
nor torch is imported to recognise their arrays.
"""
from __future__ import annotations

import numpy as np

from .autograd import Tensor
from .nd import NDArray


def to_numpy(value, what: str = "value", *, arrays_only: bool = False) -> np.ndarray:
    """``value`` as a NumPy array on the host.

    value: a Tensor, NDArray, CuPy array, torch tensor or NumPy array (a NumPy array is
    returned as it is, not copied), or a list or a scalar (through ``np.asarray``).
    arrays_only: accept only what course_lib computes (a Tensor or an NDArray) and NumPy
    arrays; anything else is a TypeError naming ``what``. For graders: a student's function
    must return course_lib's arrays, not a list, a foreign array or an imitation of one.
    """
    if isinstance(value, Tensor):
        value = value.realize_cached_data()
    if type(value) is np.ndarray:
        return value
    if isinstance(value, NDArray):
        host = value.numpy()
    elif arrays_only:
        raise TypeError(f"{what}: got a {type(value).__name__}, expected an NDArray, a Tensor or a NumPy array")
    elif hasattr(value, "__cuda_array_interface__") and callable(getattr(value, "get", None)):
        host = value.get()  # CuPy (or the tests' CuPy stand-in): an explicit device-to-host copy
    elif type(value).__module__.partition(".")[0] == "torch" and hasattr(value, "detach"):
        host = value.detach().cpu().numpy()
    else:
        return np.asarray(value)
    if type(host) is not np.ndarray:  # a subclass overriding numpy() or get() cannot slip through
        raise TypeError(f"{what}: converting a {type(value).__name__} gave a {type(host).__name__}, "
                        f"not a NumPy array")
    return host
