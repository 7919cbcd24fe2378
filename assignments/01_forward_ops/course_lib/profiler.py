# Generated from course_lib/profiler.py for the release of 01_forward_ops by `python -m course_tools.build` - do not edit.
"""How long a block of code takes and the most memory it needs at once, on any device.

    with measure(device) as m:
        loss = step(x, y)
    m.seconds, m.peak_bytes

``peak_bytes`` is the block's peak: the most memory its arrays held at any one moment, above
what was already held when the block started (arrays freed inside the block still count
while they were alive). The two devices measure it with the tool each has:

- CPU: ``tracemalloc``. NumPy reports every buffer it allocates to it, so the peak counts all
  arrays, plus the Python objects created in the block.
- CUDA: CuPy's memory pool, watched by a ``cupy.cuda.MemoryHook`` that sees every allocation
  and free: the peak of the pool's bytes in use (each array rounded up to CuPy's 512-byte
  unit). Blocks the pool merely caches for reuse are not counted, nor is memory outside the
  pool (cuBLAS workspaces, the CUDA context).

So both report "extra memory the block needed at its worst", and agree up to the 512-byte
rounding and the Python objects (tests/test_profiler.py compares them on the same work).

``seconds`` is wall-clock time; on CUDA the device is synchronised at both ends, since
kernels run asynchronously and a block would otherwise end before its work does.
"""
from __future__ import annotations

import contextlib
import time
import tracemalloc
from dataclasses import dataclass, field

from .backend import Device, cpu


@dataclass
class Measurement:
    seconds: float = 0.0
    peak_bytes: int = 0
    extra: dict = field(default_factory=dict)


def _pool_peak_hook(xp, in_use: int):
    """A MemoryHook of ``xp`` (CuPy) that follows the pool's bytes in use from ``in_use``
    and remembers their maximum (``.peak``)."""

    class PoolPeak(xp.cuda.MemoryHook):
        def __init__(self):
            self.name = f"course_lib.profiler.PoolPeak-{id(self)}"  # unique: measures may nest
            self.in_use = self.peak = in_use

        def malloc_postprocess(self, **kwargs):
            self.in_use += kwargs["mem_size"]
            self.peak = max(self.peak, self.in_use)

        def free_postprocess(self, **kwargs):
            self.in_use -= kwargs["mem_size"]

    return PoolPeak()


@contextlib.contextmanager
def _cpu_peak(result: Measurement):
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    try:
        yield
    finally:
        result.peak_bytes = int(tracemalloc.get_traced_memory()[1] - start)
        if not was_tracing:
            tracemalloc.stop()


@contextlib.contextmanager
def _pool_peak(result: Measurement, device: Device):
    xp = device.xp
    start = xp.get_default_memory_pool().used_bytes()
    with _pool_peak_hook(xp, start) as hook:
        try:
            yield
        finally:  # measure() has synchronised the device: every free has happened
            result.peak_bytes = int(hook.peak - start)


@contextlib.contextmanager
def measure(device: Device | None = None):
    """Time a block and record its peak memory (see the module docstring) on ``device``
    (default: the CPU). Yields a Measurement, filled in when the block ends."""
    device = device or cpu()
    result = Measurement()
    peak = _cpu_peak(result) if device.is_host else _pool_peak(result, device)
    device.synchronize()
    with peak:
        start = time.perf_counter()
        try:
            yield result
        finally:
            device.synchronize()
            result.seconds = time.perf_counter() - start
