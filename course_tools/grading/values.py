"""Values that cross between grader and worker: JSON for structure, .npy (no pickle) for arrays.

Allowed: None, bool, int, float, str, lists/tuples and dicts (str keys) of these, and NumPy
arrays of bool, integer or floating dtype. Anything else (objects, functions, object arrays,
custom classes that claim to equal everything) is refused with a message naming its type.
"""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np

ARRAY_KINDS = "biuf"
MAX_ARRAY_BYTES = 256 * 1024 * 1024


class ValueRefused(TypeError):
    pass


class Encoder:
    """Writes arrays into ``folder`` as <prefix><n>.npy and returns JSON-able descriptions."""

    def __init__(self, folder: Path, prefix: str):
        self.folder, self.prefix = Path(folder), prefix
        self.counter = itertools.count()

    def encode(self, value, where: str = "value"):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, (float, np.floating)):
            value = float(value)
            return value if math.isfinite(value) else {"__float__": repr(value)}
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in ARRAY_KINDS:
                raise ValueRefused(f"{where}: arrays of dtype {value.dtype} cannot be graded; "
                                   f"use numbers (float, int or bool)")
            if value.nbytes > MAX_ARRAY_BYTES:
                raise ValueRefused(f"{where}: array of {value.nbytes} bytes is too large")
            name = f"{self.prefix}{next(self.counter)}.npy"
            # (np.ascontiguousarray would turn a 0-d array into a 1-d one)
            np.save(self.folder / name, value if value.flags.c_contiguous else np.ascontiguousarray(value),
                    allow_pickle=False)
            return {"__array__": name, "shape": list(value.shape), "dtype": value.dtype.str}
        if isinstance(value, (list, tuple)):
            return {"__list__": [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)],
                    "tuple": isinstance(value, tuple)}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise ValueRefused(f"{where}: dict keys must be strings")
            return {"__dict__": {k: self.encode(v, f"{where}[{k!r}]") for k, v in value.items()}}
        raise ValueRefused(f"{where}: a {type(value).__name__} cannot be graded; return a NumPy array or a number")


def decode(data, folder: Path):
    """The inverse of Encoder.encode; arrays are loaded without pickle and checked against
    their declared shape and dtype."""
    folder = Path(folder)
    if isinstance(data, dict):
        if "__array__" in data:
            name = data["__array__"]
            if "/" in name or name.startswith("."):
                raise ValueRefused(f"bad array file name {name!r}")
            array = np.load(folder / name, allow_pickle=False)
            if list(array.shape) != list(data["shape"]) or array.dtype.str != data["dtype"]:
                raise ValueRefused(f"array {name} is {array.shape} {array.dtype}, declared "
                                   f"{tuple(data['shape'])} {data['dtype']}")
            if array.dtype.kind not in ARRAY_KINDS:
                raise ValueRefused(f"array {name} has dtype {array.dtype}")
            return array
        if "__float__" in data:
            return float(data["__float__"])
        if "__list__" in data:
            items = [decode(v, folder) for v in data["__list__"]]
            return tuple(items) if data.get("tuple") else items
        if "__dict__" in data:
            return {k: decode(v, folder) for k, v in data["__dict__"].items()}
        raise ValueRefused(f"unknown encoded value with keys {sorted(data)}")
    if isinstance(data, list):
        raise ValueRefused("bare lists are not part of the protocol")
    return data
