# Generated from course_lib/backend.py for the release of 04_conv_backward by `python -m course_tools.build` - do not edit.
"""Devices: the one seam between course_lib and an array library.

A device resolves its array module (``xp``) once: NumPy for ``cpu()``, CuPy for ``cuda()``.
Nothing else in course_lib imports numpy or cupy to compute; it asks a device for ``xp``,
and for the few things that differ between a host and an accelerator:

    device.to_numpy(array)   an explicit copy to the host (CuPy refuses implicit ones)
    device.synchronize()     wait for queued kernels (timings and memory peaks need it)
    device.is_host           True when arrays live in host memory (NumPy)

CuPy is imported only when ``cuda()`` is actually used on a machine that has an NVIDIA
driver and the ``cupy`` package, so a CPU-only machine never imports it. The test suite
builds a second ``CUDADevice`` over a strict CuPy stand-in (``tests/cupy_sim``) through this
same class, so the accelerator path runs on machines without a GPU.

The default device is ``cpu()`` unless the environment variable ``COURSE_LIB_DEVICE`` is
set to ``cuda`` (or ``cpu``).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from functools import cached_property

DEVICE_ENV_VAR = "COURSE_LIB_DEVICE"


class Device:
    """A place where arrays live and are computed on."""

    is_host = False

    def __init__(self, name: str, module_name: str):
        self.name = name
        self._module_name = module_name

    def __repr__(self) -> str:
        return f"{self.name}()"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def enabled(self) -> bool:
        raise NotImplementedError

    @cached_property
    def xp(self):
        """The array module (numpy or cupy). Raises RuntimeError if the device is not enabled."""
        if not self.enabled():
            raise RuntimeError(
                f"device {self!r} is not available on this machine "
                f"(is a GPU present and CuPy installed? `pip install course-lib[gpu]`)"
            )
        return importlib.import_module(self._module_name)

    def to_numpy(self, array):
        """A NumPy copy (in host memory) of ``array``, an array of this device's module."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Return once every computation queued on the device has finished."""


class CPUDevice(Device):
    is_host = True

    def __init__(self):
        super().__init__("cpu", "numpy")

    def enabled(self) -> bool:
        return True

    @cached_property
    def xp(self):
        _keep_large_buffers()
        return super().xp

    def to_numpy(self, array):
        return self.xp.array(array, copy=True)


def _keep_large_buffers() -> None:
    """Let glibc keep freed large buffers for reuse instead of returning them to the system.

    A convolution's im2col matrices are tens of MB, allocated and freed on every step. By
    default glibc hands allocations above 32 MB straight to mmap and unmaps them on free, so
    every step pays again for fresh pages (page faults, a sizeable part of a conv's time on the
    CPU). Raising the mmap and trim thresholds makes such buffers come back from the heap,
    already mapped. Only glibc has mallopt; elsewhere nothing changes (and
    COURSE_LIB_NO_MALLOPT=1 turns it off). Freed memory stays with the process (its resident
    size does not shrink), which is what a training loop wants."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name or os.environ.get("COURSE_LIB_NO_MALLOPT"):
        return
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 1 << 30)
    mallopt(m_trim_threshold, 1 << 30)


def _nvidia_driver_present() -> bool:
    # Looked up without importing CuPy: the kernel driver exposes these files.
    return os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidia0")


class CUDADevice(Device):
    """A GPU through CuPy, or through a module with CuPy's API (the tests' stand-in).

    needs_driver: look for the NVIDIA driver before importing the module (true for CuPy,
    whose import is slow and fails without a driver).
    """

    def __init__(self, name: str = "cuda", module_name: str = "cupy", needs_driver: bool = True):
        super().__init__(name, module_name)
        self._needs_driver = needs_driver
        self._enabled = None

    def enabled(self) -> bool:
        if self._enabled is None:
            self._enabled = self._probe()
        return self._enabled

    def _probe(self) -> bool:
        if importlib.util.find_spec(self._module_name) is None:
            return False
        if self._needs_driver and not _nvidia_driver_present():
            return False
        try:
            module = importlib.import_module(self._module_name)
            return module.cuda.runtime.getDeviceCount() > 0
        except Exception:  # a broken CUDA install is "no GPU", not a crash at import
            return False

    def to_numpy(self, array):
        return self.xp.asnumpy(array)

    def synchronize(self) -> None:
        self.xp.cuda.Device().synchronize()


_CPU = CPUDevice()
_CUDA = CUDADevice()


def cpu() -> Device:
    """The CPU device (NumPy)."""
    return _CPU


def cuda() -> Device:
    """The CUDA device (CuPy). Check ``cuda().enabled()`` before using it."""
    return _CUDA


def all_devices() -> list[Device]:
    return [_CPU, _CUDA]


def default_device() -> Device:
    """``cpu()``, or the device named by ``$COURSE_LIB_DEVICE`` ("cpu" or "cuda")."""
    name = os.environ.get(DEVICE_ENV_VAR, "cpu").strip().lower()
    if name == "cpu":
        return _CPU
    if name == "cuda":
        if not _CUDA.enabled():
            raise RuntimeError(f"{DEVICE_ENV_VAR}=cuda but no CUDA device with CuPy is available")
        return _CUDA
    raise ValueError(f"{DEVICE_ENV_VAR} must be 'cpu' or 'cuda', got {name!r}")
