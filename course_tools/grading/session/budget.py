"""A session's time: each task's checks share a budget (``task_seconds``), charged with the
submission's own CPU time (its cgroup's, or its process tree's), at least its wall time over the
wall factor; and what each check learns for the diagnoser (which call gave each value).

A mixin of StudentSession (session.py); the module docstring of session.py says how time is counted.
"""
from __future__ import annotations

import time

import numpy as np

from ..diagnosis.diagnosis import Call
from ..sandbox.cgroups import Cgroup, runnable, tree_threads
from .errors import StudentError


class TimeBudget:
    def begin_check(self, task: str | None) -> None:
        """Called before each hidden check: its task's budget is charged for the time it takes."""
        self.current_task = task
        self.view_problems = []
        self._provenance = {}

    def _remember(self, value, call: Call, path: tuple = ()) -> None:
        """Note which call (and where in its result) each returned array came from."""
        if isinstance(value, np.ndarray):
            self._provenance[id(value)] = (value, call, path)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                self._remember(item, call, path + (i,))
        elif isinstance(value, dict):
            for key, item in value.items():
                self._remember(item, call, path + (key,))

    def comparison_failed(self, got, expected, rtol: float, atol: float) -> None:
        """A hidden check's expect_close failed on ``got``: evidence for the diagnoser, when the
        value came straight from a call."""
        entry = self._provenance.get(id(got))
        if entry is not None and entry[0] is got:
            self.diagnoser.failed(self.current_task, entry[1], entry[2], got, expected, rtol, atol)

    def comparison_passed(self, got, expected, rtol: float, atol: float) -> None:
        """A hidden check's expect_close passed on ``got``: a right output, which rules out the
        misconceptions that would have made it wrong (diagnosis.py)."""
        entry = self._provenance.get(id(got))
        if entry is not None and entry[0] is got:
            self.diagnoser.passed(self.current_task, entry[1], entry[2], expected, rtol, atol)

    def remaining(self) -> float:
        return self.task_seconds - self.spent.get(self.current_task, 0.0)

    def _charge(self, seconds: float) -> None:
        self.spent[self.current_task] = self.spent.get(self.current_task, 0.0) + seconds

    def _runnable(self) -> bool | None:
        """Whether a thread of the submission's processes runs or waits for a CPU (cgroups.runnable):
        its cgroup's threads, else the worker's process tree; None: nothing to look at."""
        if self.cgroup is not None:
            found = self.cgroup.runnable()
            if found is not None:
                return found
        if self.process is None or self.process.poll() is not None:
            return None
        return runnable(tree_threads(self.process.pid))

    def _student_cpu(self) -> float | None:
        """CPU seconds the submission's processes have used in this session (every worker it had),
        or None where this machine cannot count them."""
        if self.cgroup is None:
            return self._cpu_of_past_workers if Cgroup.available() else None
        now = self.cgroup.cpu_seconds()
        return None if now is None else self._cpu_of_past_workers + now

    def _clock(self) -> tuple[float, float | None]:
        return time.monotonic(), self._student_cpu()

    def _cost_since(self, mark: tuple[float, float | None]) -> float:
        """What the time since ``mark`` (a ``_clock()``) costs the task: the submission's CPU
        seconds, but at least the wall seconds over the wall factor; the wall seconds where CPU
        time cannot be counted."""
        wall = time.monotonic() - mark[0]
        cpu = self._student_cpu()
        if mark[1] is None or cpu is None:
            return wall
        return max(cpu - mark[1], wall / self.limits.wall_factor)

    def _out_of_time(self) -> StudentError:
        task = self.current_task
        if task not in self.out_of_time:
            self.out_of_time.append(task)
        return StudentError(f"out of time: the checks of {task} used up their {self.task_seconds:g} s and the rest "
                            f"of them did not run (is some of its code very slow, or stuck in a loop?)")
