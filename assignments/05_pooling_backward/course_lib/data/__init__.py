# Generated from course_lib/data/__init__.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""Data: the 8x8 handwritten digits shipped with the package, and a batching loader."""
from __future__ import annotations

from importlib import resources
from typing import Iterator

import numpy as np

from ..autograd import Tensor
from ..backend import Device


def load_digits(split: str = "train", test_fraction: float = 0.25, seed: int = 0, dtype="float32"):
    """The UCI handwritten digits (1,797 images, see data/README.md) as NumPy arrays.

    Returns (images, labels): images (N, 1, 8, 8) scaled to [0, 1]; labels (N,) int64 in 0..9.
    split: "train", "test" or "all". The split is a fixed, seeded, stratification-free shuffle.
    """
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    with resources.files(__package__).joinpath("digits.npz").open("rb") as f:
        data = np.load(f, allow_pickle=False)
        images, labels = data["images"], data["labels"]
    images = (images.astype(dtype) / 16.0)[:, None, :, :]
    labels = labels.astype(np.int64)
    if split == "all":
        return images, labels
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    chosen = order[:n_test] if split == "test" else order[n_test:]
    return images[chosen], labels[chosen]


class DataLoader:
    """Batches of (x, y) Tensors from arrays with the same first axis.

    shuffle: a new order every epoch, drawn from a generator seeded with ``seed`` so two
    loaders with the same seed give the same batches in the same order.
    """

    def __init__(self, *arrays, batch_size: int = 32, shuffle: bool = False, seed: int = 0,
                 drop_last: bool = False, device: Device | None = None):
        if not arrays:
            raise ValueError("DataLoader needs at least one array")
        n = len(arrays[0])
        for a in arrays:
            if len(a) != n:
                raise ValueError(f"DataLoader arrays differ in length: {[len(a) for a in arrays]}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.arrays, self.batch_size, self.shuffle = arrays, batch_size, shuffle
        self.drop_last, self.device = drop_last, device
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        n = len(self.arrays[0])
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self) -> Iterator[tuple[Tensor, ...]]:
        n = len(self.arrays[0])
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            idx = order[start:start + self.batch_size]
            yield tuple(Tensor(a[idx], device=self.device, requires_grad=False) for a in self.arrays)
