# Generated from course_lib/init.py for the release of 03_ndarray by `python -m course_tools.build` - do not edit.
"""Initial values for parameters, drawn on the host from course_lib's seeded generator."""
from __future__ import annotations

import math

from . import nd
from .autograd import Tensor
from .backend import Device
from .seeding import rng


def _tensor(values, device, dtype, requires_grad) -> Tensor:
    return Tensor(values, device=device, dtype=dtype or "float32", requires_grad=requires_grad)


def rand(*shape, low=0.0, high=1.0, device: Device | None = None, dtype=None, requires_grad=False) -> Tensor:
    return _tensor(rng().uniform(low, high, size=shape), device, dtype, requires_grad)


def randn(*shape, mean=0.0, std=1.0, device: Device | None = None, dtype=None, requires_grad=False) -> Tensor:
    return _tensor(rng().normal(mean, std, size=shape), device, dtype, requires_grad)


def zeros(*shape, device: Device | None = None, dtype=None, requires_grad=False) -> Tensor:
    return Tensor(nd.zeros(shape, dtype=dtype or "float32", device=device), requires_grad=requires_grad)


def kaiming_uniform(fan_in: int, fan_out: int, shape=None, nonlinearity="relu", **kwargs) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan_in), gain = sqrt(2) for ReLU.

    Keeps the variance of activations roughly constant through ReLU layers (He et al., 2015).
    """
    if nonlinearity != "relu":
        raise ValueError(f"kaiming_uniform supports nonlinearity='relu', got {nonlinearity!r}")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / fan_in)
    shape = tuple(shape) if shape is not None else (fan_in, fan_out)
    return rand(*shape, low=-bound, high=bound, **kwargs)


def xavier_uniform(fan_in: int, fan_out: int, shape=None, gain=1.0, **kwargs) -> Tensor:
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    shape = tuple(shape) if shape is not None else (fan_in, fan_out)
    return rand(*shape, low=-bound, high=bound, **kwargs)
