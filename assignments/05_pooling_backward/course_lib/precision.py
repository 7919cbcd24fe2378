# Generated from course_lib/precision.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""Numeric precision tools for experiment 07: casting, loss scaling and sizes.

(Time and peak memory are measured by ``course_lib.profiler.measure``.)

Mixed precision here follows Micikevicius et al. (2018): the model's parameters and
activations are float16 and its matrix products and convolutions run in float16; an optimizer
updates float32 "master" copies of the parameters; the loss (softmax, log-sum-exp and the mean
over the batch) is computed in float32 from the logits cast with ``ops.cast``. float16's
smallest subnormal is 2^-24 (values below 2^-25 round to 0), so small gradients underflow;
multiplying the loss by a large scale S lifts every gradient by S (chain rule), and dividing by
S after backward, in float32, restores them. If the scaled gradients overflow (inf/NaN), the
step is skipped and S shrinks; after a run of good steps S grows again.

The scale multiplies the loss in the loss's dtype. With a float16 loss, S itself must be a
float16 number: the backward pass starts from the seed S, so S = 2^16 (above float16's largest
finite value, 65504) makes every gradient inf and every step is skipped, whatever the loss.
"""
from __future__ import annotations

import numpy

from . import nd
from .autograd import Tensor
from .nn import Module, Parameter


def cast_model(model: Module, dtype) -> Module:
    """Convert every parameter of ``model`` to ``dtype`` in place; returns the model."""
    for p in model.parameters():
        p.cached_data = p.realize_cached_data().astype(dtype)
        p.grad = None
    return model


def parameter_count(model: Module) -> int:
    return sum(p.realize_cached_data().size for p in model.parameters())


def parameter_bytes(model: Module) -> int:
    """Bytes the parameters occupy: count times the size of their dtype."""
    return sum(p.realize_cached_data().nbytes for p in model.parameters())


class LossScaler:
    """Dynamic loss scaling.

    scale(loss) multiplies the loss by ``scale``; unscale(params) divides the gradients by it
    (in float32) and reports whether all of them are finite; update(finite) halves the scale
    after an overflow and doubles it after ``growth_interval`` finite steps in a row.
    """

    def __init__(self, init_scale: float = 2.0 ** 15, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 100, min_scale: float = 1.0):
        if init_scale <= 0 or growth_factor <= 1 or not 0 < backoff_factor < 1:
            raise ValueError("LossScaler needs init_scale > 0, growth_factor > 1 and 0 < backoff_factor < 1")
        self.scale_value = float(init_scale)
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval, self.min_scale = growth_interval, min_scale
        self.good_steps = 0
        self.skipped_steps = 0

    def scale(self, loss: Tensor) -> Tensor:
        return loss * self.scale_value

    def unscale(self, params: list[Parameter]) -> tuple[list[nd.NDArray], bool]:
        """Each parameter's gradient in float32, divided by the scale; and whether all are finite."""
        raise NotImplementedError("loss_scaler: not implemented yet; you write it in assignment 07_experiments")

    def update(self, finite: bool) -> None:
        raise NotImplementedError("loss_scaler: not implemented yet; you write it in assignment 07_experiments")


class MixedPrecisionTrainer:
    """One float16 model, float32 master weights, an optimizer over the masters, a LossScaler.

    Usage per batch:  loss = trainer.step(lambda: loss_fn(ops.cast(model(x), "float32"), y))
    (the recipe: the loss in float32; ``loss_fn(model(x), y)`` computes it in float16 instead)
    The model is cast to float16 on creation; ``optimizer_factory(master_params)`` makes the
    optimizer. A step whose gradients are not finite is skipped (the masters do not move).
    """

    def __init__(self, model: Module, optimizer_factory, scaler: LossScaler | None = None):
        self.model = model
        self.params = model.parameters()
        self.masters = [Parameter(p.realize_cached_data().astype("float32")) for p in self.params]
        self.optimizer = optimizer_factory(self.masters)
        self.scaler = scaler or LossScaler()
        cast_model(model, "float16")

    def step(self, compute_loss) -> float:
        for p in self.params:
            p.grad = None
        # Overflow to inf is expected in float16 with a large scale: the scaler detects it
        # and skips the step, so NumPy's warnings about it are noise.
        with numpy.errstate(over="ignore", invalid="ignore"):
            loss = compute_loss()
            self.scaler.scale(loss).backward()
        grads, finite = self.scaler.unscale(self.params)
        if finite:
            for master, g in zip(self.masters, grads):
                master.grad = Tensor(g, requires_grad=False)
            self.optimizer.step()
            for p, master in zip(self.params, self.masters):
                p.cached_data = master.realize_cached_data().astype("float16")
        self.scaler.update(finite)
        return float(loss.numpy())
