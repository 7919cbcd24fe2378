"""CuPy's ``cupy.cuda.memory_hook``: callbacks around the pool's allocations, per thread."""
from __future__ import annotations

import collections
import threading

_local = threading.local()


def get_memory_hooks() -> collections.OrderedDict:
    hooks = getattr(_local, "memory_hooks", None)
    if hooks is None:
        hooks = _local.memory_hooks = collections.OrderedDict()
    return hooks


class MemoryHook:
    """Base class of memory hooks, as CuPy's: register with ``with hook:``; override the
    ``*_preprocess`` / ``*_postprocess`` callbacks, which receive keyword arguments only
    (device_id, size, mem_size, mem_ptr, pmem_id)."""

    name = "MemoryHook"

    def __enter__(self):
        hooks = get_memory_hooks()
        if self.name in hooks:
            raise KeyError(f"memory hook {self.name} already exists")
        hooks[self.name] = self
        return self

    def __exit__(self, *_):
        del get_memory_hooks()[self.name]

    def alloc_preprocess(self, **kwargs):
        pass

    def alloc_postprocess(self, **kwargs):
        pass

    def malloc_preprocess(self, **kwargs):
        pass

    def malloc_postprocess(self, **kwargs):
        pass

    def free_preprocess(self, **kwargs):
        pass

    def free_postprocess(self, **kwargs):
        pass
