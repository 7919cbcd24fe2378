"""The calls of ``cupy.cuda.runtime`` that course_lib and the GPU check make."""
from __future__ import annotations

import os

DEVICE_NAME = b"cupy_sim (NumPy on the host, CuPy's rules)"


def getDeviceCount() -> int:
    return 1


def deviceSynchronize() -> None:
    """Every stand-in computation has finished when its call returns."""


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def getDeviceProperties(device: int) -> dict:
    if device != 0:
        raise RuntimeError(f"cudaErrorInvalidDevice: the stand-in has one device (0), not {device}")
    return {"name": DEVICE_NAME, "totalGlobalMem": _host_memory(), "major": 0, "minor": 0}


def memGetInfo() -> tuple[int, int]:
    from .._memory import get_default_memory_pool

    total = _host_memory()
    return total - get_default_memory_pool().total_bytes(), total
