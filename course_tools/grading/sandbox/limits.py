"""What one submission's worker may use: its limits (Limits), with the defaults and the
COURSE_GRADER_* variables that change them, and the two readers of a number from the
environment that the grading's other settings use too (settings.py, suite/run.py).

bwrap.py applies them when it starts the worker (rlimits in ``preexec``, the write cap as the
size of its tmpfs); cgroups.py caps processes, memory and CPUs; session/ counts the time limits.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field


def int_setting(name: str, default: int, scale: int = 1) -> int:
    """A whole number from the environment (nbgrader_config.py sets these for the grading
    processes), times ``scale`` (1024 ** 2 for a setting in MB); ``default`` when it is not set."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(float(raw) * scale)
    except ValueError:
        raise ValueError(f"{name}={raw!r} must be a number") from None


def float_setting(name: str, default: float) -> float:
    """A setting that may have a fraction (1.5 CPUs), from the environment like ``int_setting``'s."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} must be a number") from None


@dataclass
class Limits:
    """Per-submission limits: defaults, or COURSE_GRADER_MEMORY_MB, COURSE_GRADER_CPU_SECONDS,
    COURSE_GRADER_PROCESSES, COURSE_GRADER_DISK_MB, COURSE_GRADER_CPUS, COURSE_GRADER_WALL_FACTOR
    in the environment.

    Time limits (a cell's, a call's, a task's budget) count the submission's own CPU time, not
    the clock on the wall: on a shared machine the wall clock also runs while other gradings (or
    anyone's jobs) hold the CPUs, so a wall-clock limit lets a neighbour use up an honest
    submission's time. CPU time alone would let code that sleeps or blocks never run out, so each
    limit also has a wall-clock backstop, ``wall_factor`` times longer: code is stopped when it
    has used its seconds of CPU, or ``wall_factor`` times as many seconds have passed, whichever
    comes first. The factor is how crowded a machine may be (gradings per free CPU) before an
    honest submission's limits start to bind by the wall clock.
    """
    # address space of each process: past it, MemoryError; the cgroup (all processes and the tmpfs) gets 1.5x
    memory_bytes: int = field(default_factory=lambda: int_setting("COURSE_GRADER_MEMORY_MB", 2 * 1024 ** 3, 1024 ** 2))
    cgroup_memory_bytes: int = None
    cpu_seconds: int = field(default_factory=lambda: int_setting("COURSE_GRADER_CPU_SECONDS", 300))
    processes: int = field(default_factory=lambda: int_setting("COURSE_GRADER_PROCESSES", 32))
    disk_bytes: int = field(default_factory=lambda: int_setting("COURSE_GRADER_DISK_MB", 256 * 1024 ** 2, 1024 ** 2))
    # CPUs the worker and every process it starts may use together (cgroup cpu.max; 0: no cap)
    cpus: float = field(default_factory=lambda: float_setting("COURSE_GRADER_CPUS", 1.0))
    wall_factor: float = field(default_factory=lambda: float_setting("COURSE_GRADER_WALL_FACTOR", 4.0))
    file_bytes: int = 64 * 1024 ** 2
    open_files: int = 256

    def __post_init__(self):
        if self.cgroup_memory_bytes is None:
            self.cgroup_memory_bytes = self.memory_bytes * 3 // 2
        if self.wall_factor < 1:
            raise ValueError(f"COURSE_GRADER_WALL_FACTOR={self.wall_factor:g} must be at least 1")
        if self.cpus < 0:
            raise ValueError(f"COURSE_GRADER_CPUS={self.cpus:g} must be 0 (no cap) or more")
