"""Naming the mistake: a failing answer matched against the course's known wrong implementations.

A *misconception* is a named mistake of one task (``autograder/<assignment>/misconceptions.py``): a short
explanation for the student, where the notebook explains the idea, and a wrong implementation
that runs here, in the grader (the course's own code, never the student's). It answers the same
scenario calls the hidden checks make (``Call``), the way a student with that misconception would.

When a hidden check's ``expect_close`` fails, the diagnoser looks up which call produced the
student's value (the session records it), runs the task's misconceptions on the same inputs and
compares, within the check's own tolerance. A misconception is named for a task only when

  * it agrees with the student on at least two distinct failed inputs,
  * it disagrees with the student on none of the failed inputs it applies to,
  * on those inputs its values differ from the right ones (a mistake that happens to give the
    right answer proves nothing), and
  * no comparison the student *passed* is one where it predicts a wrong value: a mistake that
    would make dw and db wrong is not named when only dw is (``passed`` records those, and
    they are weighed only for a candidate, so a right answer costs the grader nothing more),

and no other misconception of the task also qualifies. The feedback says "looks like": it is a
diagnosis from values, not a verdict.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from course_lib import tasks


@dataclass(frozen=True)
class Call:
    """One scenario request as the hidden check made it: the inputs, as the grader sent them."""
    scenario: str
    args: tuple
    options: dict

    def fingerprint(self) -> str:
        digest = hashlib.sha256(self.scenario.encode())
        _feed(digest, self.args)
        return digest.hexdigest()[:16]


def _feed(digest, value):
    if isinstance(value, np.ndarray):
        digest.update(str((value.dtype.str, value.shape)).encode() + value.tobytes())
    elif isinstance(value, (list, tuple)):
        for v in value:
            _feed(digest, v)
    elif isinstance(value, dict):
        for k in sorted(value):
            digest.update(k.encode())
            _feed(digest, value[k])
    else:
        digest.update(repr(value).encode())


@dataclass(frozen=True)
class Misconception:
    task: str
    name: str                  # an id, e.g. "kernel_not_flipped"
    title: str                 # "the kernel is not flipped"
    explanation: str           # for the student: what the mistake is, why it gives these numbers
    where: str                 # where the notebook explains the idea
    compute: Callable[[Call], object]  # the wrong result for a call, or None where it does not apply

    def as_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "explanation": self.explanation, "where": self.where}


def notebook_place(part: str, notebook: str, title: str, more: str = "") -> str:
    """A Misconception's ``where``: 'section 6 of 04_conv_backward, "The backward pass, as
    convolutions"' (``part`` names the section or Part; ``more`` follows the quoted title)."""
    return f"{part} of {notebook}, \"{title}\"{more}"


def misconceptions_of(assignment: str) -> list[Misconception]:
    """The catalogue of one assignment, autograder/<assignment>/misconceptions.py (empty where
    none is written)."""
    from ..assignment_folder import assignment_module  # its modules import this one

    module = assignment_module(assignment, "misconceptions")
    return list(module.MISCONCEPTIONS) if module else []


def _path_value(value, path):
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, (list, tuple)) and isinstance(key, int) and key < len(value):
            value = value[key]
        else:
            return None
    return value


def _agrees(a, b, rtol: float, atol: float) -> bool:
    try:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


@dataclass
class _Evidence:
    matched: set = field(default_factory=set)     # fingerprints of failed inputs it explains
    contradicted: int = 0                           # failed inputs where it gives something else


class Diagnoser:
    """Evidence per task and misconception, gathered from the failed comparisons of one grading."""

    def __init__(self, assignment: str):
        self.by_task: dict[str, list[Misconception]] = {}
        for m in misconceptions_of(assignment):
            self.by_task.setdefault(m.task, []).append(m)
        self.evidence: dict[tuple[str, str], _Evidence] = {}
        self.passes: dict[str, list[tuple]] = {}  # task -> [(call, path, expected, rtol, atol)]
        self._cache: dict[tuple[str, str], object] = {}

    def _wrong_value(self, m: Misconception, call: Call, path: tuple):
        key = (m.name, call.fingerprint())
        if key not in self._cache:
            try:
                self._cache[key] = m.compute(call)
            except Exception:  # noqa: BLE001 - a wrong implementation that cannot handle this input
                self._cache[key] = None
        return _path_value(self._cache[key], path)

    def passed(self, task: str | None, call: Call, path: tuple, expected, rtol: float, atol: float) -> None:
        """A comparison passed: the student's value at ``path`` of ``call`` is right. A misconception
        that predicts a wrong value there is contradicted (weighed in ``diagnosis``)."""
        if self.by_task.get(task):
            self.passes.setdefault(task, []).append((call, path, expected, rtol, atol))

    def _right_where_it_predicts_wrong(self, task: str, m: Misconception) -> bool:
        for call, path, expected, rtol, atol in self.passes.get(task, []):
            wrong = self._wrong_value(m, call, path)
            if wrong is not None and not _agrees(wrong, expected, rtol, atol):
                return True
        return False

    def failed(self, task: str | None, call: Call, path: tuple, got, expected, rtol: float, atol: float) -> None:
        """A comparison failed: ``got`` (the value at ``path`` of the student's result of ``call``)
        is not ``expected``. Weigh it against each misconception of ``task``."""
        for m in self.by_task.get(task, []):
            wrong = self._wrong_value(m, call, path)
            if wrong is None:
                continue  # does not apply to this call
            if _agrees(wrong, expected, rtol, atol):
                continue  # the mistake gives the right answer here: no evidence either way
            evidence = self.evidence.setdefault((task, m.name), _Evidence())
            if _agrees(got, wrong, rtol, atol):
                evidence.matched.add(call.fingerprint())
            else:
                evidence.contradicted += 1

    def diagnosis(self, task: str) -> Misconception | None:
        qualified = [m for m in self.by_task.get(task, [])
                     if (e := self.evidence.get((task, m.name))) and len(e.matched) >= 2 and e.contradicted == 0
                     and not self._right_where_it_predicts_wrong(task, m)]
        return qualified[0] if len(qualified) == 1 else None


def check_catalogue() -> None:
    """Every misconception names a task of its assignment (tests call this)."""
    for assignment in tasks.ASSIGNMENTS:
        known = set(tasks.LIBRARY_TASKS[assignment]) | set(tasks.NOTEBOOK_TASKS[assignment])
        for m in misconceptions_of(assignment):
            if m.task not in known:
                raise ValueError(f"misconception {m.name} of {assignment} names the unknown task {m.task}")
