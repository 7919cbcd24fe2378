"""``cupy.cuda`` as far as course_lib uses it: Device, Stream.null, runtime, MemoryHook."""
from __future__ import annotations

from . import memory_hook, runtime
from .memory_hook import MemoryHook


class Device:
    """The stand-in's only device, 0."""

    def __init__(self, device=None):
        self.id = 0 if device is None else int(device)
        if self.id != 0:
            raise RuntimeError(f"cudaErrorInvalidDevice: the stand-in has one device (0), not {self.id}")

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"

    def __enter__(self):
        return self

    def __exit__(self, *_):
        return False

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        runtime.deviceSynchronize()

    @property
    def mem_info(self) -> tuple[int, int]:
        return runtime.memGetInfo()


class Stream:
    """Streams exist so ``Stream.null.synchronize()`` works; the stand-in runs synchronously."""

    def synchronize(self) -> None:
        runtime.deviceSynchronize()


Stream.null = Stream()


def get_current_stream() -> Stream:
    return Stream.null


__all__ = ["Device", "MemoryHook", "Stream", "get_current_stream", "memory_hook", "runtime"]
