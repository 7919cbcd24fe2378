# Generated from course_lib/seeding.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""One seed for every random source a course run touches."""
from __future__ import annotations

import random
import sys

import numpy as np

_GENERATOR = [np.random.default_rng(0)]


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global state, course_lib's generator, and PyTorch and
    CuPy when they are already imported (this never imports them)."""
    seed = int(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    _GENERATOR[0] = np.random.default_rng(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)
    if "cupy" in sys.modules:
        sys.modules["cupy"].random.seed(seed % 2**32)


def rng() -> np.random.Generator:
    """course_lib's generator: initial weights, shuffling and test data draw from it."""
    return _GENERATOR[0]
