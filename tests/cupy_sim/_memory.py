"""The stand-in's device memory: one pool, CuPy's rounding, CuPy's memory hooks.

CuPy's default pool hands every new array a block of its size rounded up to 512 bytes,
takes the block back when the last array using it is garbage-collected, and keeps freed
blocks cached for reuse (``total_bytes`` = in use + cached) until ``free_all_blocks()``.
Views share their base array's block. Registered ``cuda.MemoryHook`` objects are called
around every allocation and free with CuPy's keyword arguments.

Simplification (documented in the package docstring): a cached block is reused only for a
request of exactly its rounded size; CuPy also splits larger cached blocks.
"""
from __future__ import annotations

import collections
import itertools

from .cuda.memory_hook import get_memory_hooks

ROUNDING = 512  # bytes: CuPy's allocation unit
DEVICE_ID = 0
_pmem_ids = itertools.count(1)


def round_size(size: int) -> int:
    return -(-size // ROUNDING) * ROUNDING


def _call_hooks(event: str, **kwargs) -> None:
    for hook in list(get_memory_hooks().values()):
        getattr(hook, event)(device_id=DEVICE_ID, **kwargs)


class MemoryPool:
    """CuPy's ``MemoryPool`` as far as course_lib and its tests use it (bytes, not blocks)."""

    def __init__(self):
        self._used = 0
        self._held = 0
        self._cached = collections.Counter()  # rounded size -> number of cached free blocks

    def used_bytes(self) -> int:
        return self._used

    def total_bytes(self) -> int:
        return self._held

    def free_bytes(self) -> int:
        return self._held - self._used

    def n_free_blocks(self) -> int:
        return sum(self._cached.values())

    def free_all_blocks(self, stream=None) -> None:
        self._held -= sum(size * count for size, count in self._cached.items())
        self._cached.clear()

    def _malloc(self, size: int, ptr: int) -> tuple[int, int]:
        """Account for a new array of ``size`` bytes; returns (rounded size, pooled-memory id)."""
        mem_size = round_size(size)
        _call_hooks("malloc_preprocess", size=size, mem_size=mem_size)
        if self._cached[mem_size]:
            self._cached[mem_size] -= 1
        else:
            _call_hooks("alloc_preprocess", mem_size=mem_size)
            self._held += mem_size
            _call_hooks("alloc_postprocess", mem_size=mem_size, mem_ptr=ptr)
        self._used += mem_size
        pmem_id = next(_pmem_ids)
        _call_hooks("malloc_postprocess", size=size, mem_size=mem_size, mem_ptr=ptr, pmem_id=pmem_id)
        return mem_size, pmem_id

    def _free(self, mem_size: int, ptr: int, pmem_id: int) -> None:
        _call_hooks("free_preprocess", mem_size=mem_size, mem_ptr=ptr, pmem_id=pmem_id)
        self._used -= mem_size
        self._cached[mem_size] += 1
        _call_hooks("free_postprocess", mem_size=mem_size, mem_ptr=ptr, pmem_id=pmem_id)


_DEFAULT_POOL = MemoryPool()


def get_default_memory_pool() -> MemoryPool:
    return _DEFAULT_POOL


class Allocation:
    """One block of the pool, held by an array and all its views; freed when they are all gone."""

    __slots__ = ("mem_size", "ptr", "pmem_id")

    def __init__(self, size: int, ptr: int):
        self.ptr = ptr
        self.mem_size, self.pmem_id = _DEFAULT_POOL._malloc(size, ptr)

    def __del__(self):
        try:
            _DEFAULT_POOL._free(self.mem_size, self.ptr, self.pmem_id)
        except Exception:  # interpreter shutdown: modules may already be torn down
            pass
