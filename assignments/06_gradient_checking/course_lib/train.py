# Generated from course_lib/train.py for the release of 06_gradient_checking by `python -m course_tools.build` - do not edit.
"""A training loop and an accuracy measure, shared by the demo, notebooks and experiments."""
from __future__ import annotations

import numpy as np

from . import nn
from .autograd import Tensor, no_grad
from .backend import Device
from .data import DataLoader


def small_cnn(channels: tuple[int, int] = (8, 16), pool: str = "max", device: Device | None = None,
              dtype="float32") -> nn.Module:
    """The course's small CNN for 8x8 digits: x (N, 1, 8, 8) -> logits (N, 10).

    conv3x3 -> ReLU -> pool 2 -> conv3x3 -> ReLU -> pool 2 -> flatten -> linear.
    """
    if pool not in ("max", "avg"):
        raise ValueError(f"pool must be 'max' or 'avg', got {pool!r}")
    pool_layer = nn.MaxPool2d if pool == "max" else nn.AvgPool2d
    c1, c2 = channels
    return nn.Sequential(
        nn.Conv(1, c1, 3, device=device, dtype=dtype), nn.ReLU(), pool_layer(2),
        nn.Conv(c1, c2, 3, device=device, dtype=dtype), nn.ReLU(), pool_layer(2),
        nn.Flatten(), nn.Linear(c2 * 2 * 2, 10, device=device, dtype=dtype),
    )


def train_epoch(model: nn.Module, loader: DataLoader, optimizer, loss_fn=None, progress=None) -> float:
    """One pass over ``loader``; returns the mean training loss. ``progress``: a tqdm bar or None."""
    loss_fn = loss_fn or nn.SoftmaxLoss()
    model.train()
    total, batches = 0.0, 0
    for x, y in loader:
        optimizer.reset_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        total += float(loss.numpy())
        batches += 1
        if progress is not None:
            progress.update(1)
            progress.set_postfix(loss=f"{total / batches:.3f}")
    return total / max(batches, 1)


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray, batch_size: int = 512,
             device: Device | None = None) -> float:
    """Fraction of ``images`` (N, 1, 8, 8) whose argmax logit equals the label."""
    model.eval()
    correct = 0
    with no_grad():
        for start in range(0, len(labels), batch_size):
            x = Tensor(images[start:start + batch_size], device=device, dtype=_model_dtype(model),
                       requires_grad=False)
            logits = model(x).numpy()
            correct += int((logits.argmax(axis=1) == labels[start:start + batch_size]).sum())
    return correct / len(labels)


def _model_dtype(model: nn.Module) -> str:
    params = model.parameters()
    return params[0].dtype if params else "float32"
