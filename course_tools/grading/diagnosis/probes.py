"""Naming the mistake offline: `course check`'s probes, run in the student's own kernel.

The hidden suites never reach a self-paced learner's machine, so `course check` (course_student/
check.py) cannot replay their inputs. Instead each misconception module lists ``PROBES``: a few
inputs per task on which its mistakes show. For every task whose visible check failed,

  1. the probes run in the notebook's kernel, through the worker's scenario functions (the same
     code that answers the hidden checks, on the notebook's namespace): the student's values;
  2. the same scenarios run here on the reference course_lib (or a probe's own ``expected``):
     the right values;
  3. each value that differs is a failed comparison for the same ``Diagnoser`` the grader uses,
     with its rules (two agreeing inputs, no contradiction, one candidate).

Values cross between the kernel and here in the worker protocol's format (no pickle).
Only the full course bundle has this module: the student install ships no misconception code.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..assignment_folder import assignment_module
from .diagnosis import Diagnoser, Misconception, misconceptions_of
from .probe_calls import Probe
from ..views import values_of
from ..sandbox.worker import protocol, scenarios
from ..sandbox.worker.protocol import StridedView


def probes_of(assignment: str, failed: list[str]) -> list[Probe]:
    """The probes of the ``failed`` tasks (none where a module has no PROBES).

    A probe runs the student's code of its task and of the tasks in the module's ``NEEDS``. The
    hidden checks lend the grader's version of those (reference.py); a student's kernel has only
    the student's, so a task whose needed task failed too is not probed: its values could carry
    the other task's mistake and look like one of its own."""
    if not misconceptions_of(assignment):
        return []
    module = assignment_module(assignment, "misconceptions")
    needs = getattr(module, "NEEDS", {})
    probed = {t for t in failed if not set(needs.get(t, ())) & set(failed)}
    return [p for p in getattr(module, "PROBES", []) if p.task in probed]


def kernel_code(requests: Path, answers: Path) -> str:
    """The code cell that answers the probes in the notebook's kernel (its globals are the
    notebook's namespace, which the scenarios need for "student:" targets)."""
    return f'''
def _course_check_probes():
    import os
    from course_tools.grading.sandbox.worker import protocol, scenarios
    fd = os.open({str(requests)!r}, os.O_RDONLY)
    try:
        requests = protocol.read_frame(fd)
    finally:
        os.close(fd)
    answers = []
    for scenario, args, options in requests:
        try:
            answers.append({{"ok": True, "value": scenarios.SCENARIOS[scenario](globals(), *args, **options)}})
        except Exception as err:  # the student's code failed on this probe: no evidence
            answers.append({{"ok": False, "error": f"{{type(err).__name__}}: {{err}}"[:300]}})
    fd = os.open({str(answers)!r}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        protocol.write_frame(fd, answers)
    except protocol.ValueRefused:
        protocol.write_frame(fd, [{{"ok": False, "error": "refused"}} for _ in requests])
    finally:
        os.close(fd)


_course_check_probes()
del _course_check_probes
'''


def write_requests(probes: list[Probe], path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        protocol.write_frame(fd, [[p.call.scenario, list(p.call.args), dict(p.call.options)] for p in probes])
    finally:
        os.close(fd)


def read_answers(path: Path) -> list:
    fd = os.open(path, os.O_RDONLY)
    try:
        return protocol.read_frame(fd)
    finally:
        os.close(fd)


def _graded_form(scenario: str, value):
    """A scenario's raw result in the form the grader compares (StudentSession's wrappers)."""
    if scenario == "ndarray_steps":
        view = StridedView(np.asarray(value["buffer"]).reshape(-1), tuple(value["shape"]), tuple(value["strides"]),
                           int(value["offset"]))
        return {"values": values_of(view)}
    if scenario == "loss_scaler_run":
        return {key: np.array([float(r[key]) for r in value]) for key in ("scale", "good", "skipped", "finite")}
    return value


def _leaves(value, path=()):
    if isinstance(value, np.ndarray) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _leaves(item, path + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (key,))


def _at(value, path):
    for key in path:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, (list, tuple)) and isinstance(key, int) and key < len(value):
            value = value[key]
        else:
            return None
    return value


def _close(got, expected, rtol, atol) -> bool:
    try:
        got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True))


def reference(probe: Probe):
    """The right answer to a probe: its own ``expected``, or its scenario on the reference course_lib."""
    if probe.expected is not None:
        return probe.expected()
    call = probe.call
    return scenarios.SCENARIOS[call.scenario]({}, *call.args, **call.options)


def diagnose(assignment: str, probes: list[Probe], answers: list) -> dict[str, Misconception]:
    """Each probed task's diagnosis from the kernel's raw ``answers`` (in the order of ``probes``)."""
    values = []
    for probe, answer in zip(probes, answers):
        try:
            ok = isinstance(answer, dict) and answer.get("ok")
            values.append(_graded_form(probe.call.scenario, answer["value"]) if ok else None)
        except (KeyError, TypeError, ValueError, IndexError):
            values.append(None)  # an answer that cannot be read: no evidence
    return diagnose_values(assignment, probes, values)


def diagnose_values(assignment: str, probes: list[Probe], values: list) -> dict[str, Misconception]:
    """The same from the student's values in graded form (None: the code raised, which the check's own
    message reports better than a guess could)."""
    diagnoser = Diagnoser(assignment)
    for probe, got in zip(probes, values):
        if got is None:
            continue
        try:
            expected = _graded_form(probe.call.scenario, reference(probe))
        except (KeyError, TypeError, ValueError, IndexError, NameError):
            continue
        for path, right in _leaves(expected):
            value = _at(got, path)
            if value is not None and not _close(value, right, probe.rtol, probe.atol):
                diagnoser.failed(probe.task, probe.call, path, value, right, probe.rtol, probe.atol)
    found = {}
    for task in dict.fromkeys(p.task for p in probes):
        diagnosis = diagnoser.diagnosis(task)
        if diagnosis is not None:
            found[task] = diagnosis
    return found
