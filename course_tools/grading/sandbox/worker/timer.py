"""The time limit of the code the worker runs (a cell, a request, one implementation a check
function judges): armed before it runs, CellTimeout when it is reached, the message the grader
reports. Its own module because both main.py (cells, requests) and scenarios.py (the check
function's turns) arm it, and neither imports the other for it.
"""
from __future__ import annotations

import signal


class CellTimeout(BaseException):
    """Raised by the alarm; a BaseException so that `except Exception` in student code does not swallow it."""


# Time limits count this process's CPU time (ITIMER_PROF: user and system time of all its
# threads), so that a crowded machine does not use up a submission's time; a wall-clock
# backstop wall_factor times longer (ITIMER_REAL) stops code that sleeps or blocks. Both end in
# SIGALRM, so code that ignores SIGALRM is left to the grader's own deadline, as it always was.
WALL_FACTOR = 4.0  # set from job.json
_cpu_limit_reached = False


def _alarm(signum, frame):
    raise CellTimeout()


def _cpu_used_up(signum, frame):
    global _cpu_limit_reached
    _cpu_limit_reached = True
    signal.raise_signal(signal.SIGALRM)


def _start_timer(seconds: float) -> None:
    """Arm the time limit of the code about to run: CellTimeout when it is reached."""
    global _cpu_limit_reached
    _cpu_limit_reached = False
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _cpu_used_up)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)


def _stop_timer() -> tuple[float, float]:
    """Disarm the time limit; returns what was left of it (CPU seconds, wall seconds)."""
    return signal.setitimer(signal.ITIMER_PROF, 0)[0], signal.setitimer(signal.ITIMER_REAL, 0)[0]


def _resume_timer(left: tuple[float, float]) -> None:
    """Re-arm a limit that ``_stop_timer`` paused, with the time it had left."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _cpu_used_up)
    if left[0] > 0:
        signal.setitimer(signal.ITIMER_PROF, left[0])
    if left[1] > 0:
        signal.setitimer(signal.ITIMER_REAL, left[1])


def timeout_message(seconds: float) -> str:
    if _cpu_limit_reached or WALL_FACTOR == 1:
        return f"took longer than {seconds:g} s of CPU time and was stopped"
    return (f"took longer than {seconds * WALL_FACTOR:g} s and was stopped (waiting or sleeping, not computing, "
            f"most of that time)")
