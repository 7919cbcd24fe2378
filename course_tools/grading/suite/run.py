"""Running a hidden suite against one submission, and scoring it per task.

A hidden test is a pytest function in autograder/<assignment>/ marked with its task id:

    @task("forward_matmul", weight=2)
    def test_batched_matmul_broadcasts_batch_axes(student, rng):
        "batched matmul with broadcast batch axes"   # the line the student sees in feedback
        a, b = rng.standard_normal((2, 1, 3, 4)), rng.standard_normal((5, 4, 2))
        expect_close(student.forward("MatMul", {}, a, b), a @ b, "MatMul.compute((2,1,3,4), (5,4,2))")

A task scores points * (weight of its passed tests) / (weight of all its tests): a half-right
answer gets part of the points. Feedback names each check by its docstring and says why it
failed (the assertion's message), never showing the test's code.

    python -m course_tools.grading.suite 04_conv_backward path/to/notebook.ipynb [--json out.json]

(That command is route.py's grade_one in a process of its own; launchers give it ``--settings``.)
"""
from __future__ import annotations

import contextlib
import os
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from course_lib import tasks
from course_lib.checks import assert_close
from course_student.words import plural

from ...build import release_notebook as release_notebook_of
from ...demonstrations import is_demonstration
from ...release_versions import task_contracts
from ..assignment_folder import SUITES
from ..release import read_release
from ..session.expect import as_number_or_array, as_numbers
from ..session.session import CURRENT, GradingError, StudentError, StudentSession



def task(task_id: str, weight: float = 1.0, contract: str | None = None, not_for: tuple[str, ...] = ()):
    """Mark a hidden test as one check of ``task_id``. A task's contract is the fingerprint of its
    released ``<task>_code`` cell (release_versions.task_contracts). ``contract``: this check grades
    only a release whose task has that contract (one an earlier release handed out, kept for its
    students); once a check names a contract, the task's other checks do not grade it.
    ``not_for``: contracts this check does not fit (a function the earlier cell did not ask for)."""
    known = {t for a in tasks.ASSIGNMENTS for t in tasks.LIBRARY_TASKS[a] + tasks.NOTEBOOK_TASKS[a]}
    if task_id not in known:
        raise ValueError(f"unknown task id {task_id!r}")
    not_for = (not_for,) if isinstance(not_for, str) else tuple(not_for)
    return pytest.mark.task(task_id, weight=weight, contract=contract, not_for=not_for)


def fits_contract(marker, contracts: dict[str, str], named: set[tuple[str, str]]) -> bool:
    """Whether the check with task ``marker`` grades the release whose tasks have ``contracts``
    (task -> fingerprint); ``named``: the (task, contract) pairs some check names."""
    task_id, mine = marker.args[0], contracts.get(marker.args[0])
    wanted = marker.kwargs.get("contract")
    if wanted is not None:
        return wanted == mine
    return (task_id, mine) not in named and mine not in marker.kwargs.get("not_for", ())


def expect_close(got, expected, what: str, rtol: float = 1e-6, atol: float = 1e-8, dtype=None):
    """assert_close for hidden tests; with ``dtype``, the result must also have that dtype. A
    failure is also evidence for naming the student's mistake (diagnosis.py). ``got`` (the
    worker's value) must be an array or a number: anything else fails the check (expect.py). A
    pass is evidence too: against the mistakes that would have made this value wrong."""
    if got is not None:  # None: assert_close's own message ("did the function forget to return?")
        as_number_or_array(got, what)
    if dtype is not None and getattr(got, "dtype", None) != np.dtype(dtype):
        raise AssertionError(f"{what}: wrong dtype: got {getattr(got, 'dtype', type(got).__name__)}, expected {dtype}")
    try:
        assert_close(got, expected, what, rtol=rtol, atol=atol)
    except AssertionError:
        if CURRENT:
            CURRENT[-1].comparison_failed(got, expected, rtol, atol)
        raise
    if CURRENT:
        CURRENT[-1].comparison_passed(got, expected, rtol, atol)


def notebook_value(student, name: str):
    """The value the notebook left in the variable ``name``, unread (pass it through a reader of
    expect.py); a missing variable fails the check, naming it."""
    try:
        return student.variable(name)
    except StudentError as err:
        raise AssertionError(f"{name}: {err}") from None


def worked_answer(student, name: str, shape: tuple) -> np.ndarray:
    """A numeric answer the notebook stored in ``name`` (a list or array of numbers), as a float64
    array of ``shape``; the check fails if it is missing, not numbers or misshapen."""
    array = as_numbers(notebook_value(student, name), name)
    if array.shape != tuple(shape):
        raise AssertionError(f"{name} should have shape {tuple(shape)}, got {array.shape}")
    return array


def expect_worked(array: np.ndarray, expected, name: str, hint: str) -> None:
    """Compare a worked answer without revealing the expected numbers in the message."""
    wrong = ~np.isclose(array, expected, rtol=1e-9, atol=1e-9)
    if wrong.any():
        raise AssertionError(f"{name}: wrong values ({int(wrong.sum())} of {wrong.size} entries are not right); {hint}")


def graded_tasks(release_notebook: Path) -> dict[str, float]:
    """Autograded test cells of the release: task id -> points."""
    from ...release_versions import graded_tasks as tasks_of

    return tasks_of(read_release(release_notebook))


class _Recorder:
    """A pytest plugin that records each hidden check: its task, weight, outcome and message.

    A check passes only if its test passes *and* every non-compact rerun agreed (views.py). An
    exception that is neither a failed assertion nor the student's code failing (StudentError)
    comes from the grader itself: it becomes a grading error, as does a check that skips or a
    fixture that fails; none of them is a failed check."""

    def __init__(self, session: StudentSession, only_tasks: set[str] | None = None,
                 contracts: dict[str, str] | None = None):
        self.session = session
        self.only_tasks = only_tasks
        self.contracts = contracts or {}
        self.earlier_checks: set[str] = set()  # tasks whose checks were chosen for an earlier contract
        self.records: list[dict] = []
        self.grading_errors: list[str] = []
        self.collected_tasks: set[str] = set()  # the tasks of the checks that were to run, run or not

    def pytest_configure(self, config):
        config.addinivalue_line("markers", "task(task_id, weight=1.0, contract=None, not_for=()): the task a hidden "
                                           "check grades, and the releases of it that it fits")

    def pytest_collection_modifyitems(self, session, config, items):
        # An earlier release version grades only the tasks it had (target.py): today's suite may
        # check tasks added since, which its students never saw. Each task is graded by the checks
        # that fit the contract of the release's <task>_code cell (task()).
        markers = [m for m in (i.get_closest_marker("task") for i in items) if m is not None]
        named = {(m.args[0], m.kwargs["contract"]) for m in markers if m.kwargs.get("contract")}
        left_out = {(m.args[0], c) for m in markers for c in m.kwargs.get("not_for", ())}
        self.earlier_checks = {t for t, c in named | left_out if self.contracts.get(t) == c}

        def graded(item) -> bool:
            marker = item.get_closest_marker("task")
            if marker is None:
                return True
            return ((self.only_tasks is None or marker.args[0] in self.only_tasks)
                    and fits_contract(marker, self.contracts, named))

        keep = [i for i in items if graded(i)]
        self.collected_tasks = {m.args[0] for m in (i.get_closest_marker("task") for i in keep) if m is not None}
        if len(keep) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i not in keep])
            items[:] = keep

    def pytest_runtest_setup(self, item):
        marker = item.get_closest_marker("task")
        self.session.begin_check(marker.args[0] if marker else None)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        marker = item.get_closest_marker("task")
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            self.grading_errors.append(f"{item.nodeid}: the hidden check was skipped ({reason})")
            return
        if report.when != "call":
            if report.failed:
                self.grading_errors.append(f"{item.nodeid}: {report.when} failed: {_exception_line(call)}")
            return
        if marker is None:
            self.grading_errors.append(f"{item.nodeid}: a hidden test without a task marker")
            return
        passed, message = report.passed, ""
        if call.excinfo is not None:
            err = call.excinfo.value
            if isinstance(err, GradingError):
                if str(err) not in self.grading_errors:
                    self.grading_errors.append(str(err))
                return
            if isinstance(err, StudentError):
                message = f"your code: {err}"
            elif isinstance(err, AssertionError):
                message = str(err) or "a hidden check failed"
            else:
                self.grading_errors.append(f"{item.nodeid}: the grader's check raised {_exception_line(call)}")
                return
        elif self.session.view_problems:
            passed, message = False, self.session.view_problems[0]
        callspec = getattr(item, "callspec", None)
        self.records.append({"task": marker.args[0], "weight": float(marker.kwargs.get("weight", 1.0)),
                             "check": (item.function.__doc__ or item.name).strip().splitlines()[0],
                             "test": item.originalname or item.name, "case": callspec.id if callspec else "",
                             "passed": passed, "message": message[:1500]})


def _exception_line(call) -> str:
    if call is None or call.excinfo is None:
        return "no exception"
    err = call.excinfo.value
    return f"{type(err).__name__}: {str(err)[:400]}"


def run_suite(assignment: str, notebook: Path, release_notebook: Path | None = None,
              suite_dir: Path | None = None, student_lib: Path | None = None, **session_options) -> dict:
    """Grade one notebook; returns {"tasks": {task: {"points", "score", "checks": [...]}}, ...}, or,
    when the grader itself failed, {"grading_error": why, "tasks": {}}: nothing to store.
    ``student_lib`` (with ``release_notebook``): an earlier release version's course_lib, graded
    on the tasks of that release only."""
    release_notebook = release_notebook or release_notebook_of(assignment)
    points = graded_tasks(release_notebook)
    suite = Path(suite_dir) if suite_dir else SUITES / assignment
    start = time.perf_counter()
    with StudentSession(assignment, notebook, release_notebook, student_lib=student_lib,
                        **session_options) as session:
        plugin = _Recorder(session, set(points) if student_lib is not None else None,
                           task_contracts(read_release(release_notebook)))
        CURRENT.append(session)
        try:
            if not suite.is_dir():
                exit_code = None
                plugin.grading_errors.append(f"no hidden suite at {suite}")
            else:
                with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
                    exit_code = pytest.main([str(suite), "-qq", "--tb=no", "-rN", "-p", "no:cacheprovider",
                                             "--import-mode=importlib", "-p", "no:warnings", "-o", "addopts=",
                                             "-o", "python_files=test_*.py"], plugins=[plugin])
        finally:
            CURRENT.pop()
        load_errors = session.loaded_cell_errors()
        fatal, starts, kind, out_of_time = session.fatal, session.starts, session.kind, session.out_of_time
        task_seconds = session.task_seconds
        diagnoser = session.diagnoser
        timing = dict(session.timing)
        slow_cells = sorted((c for c in session.load_report if isinstance(c.get("seconds"), (int, float))),
                            key=lambda c: -c["seconds"])[:5]
    total = time.perf_counter() - start
    timing = {"sandbox_and_imports": round(timing["start"], 3), "notebook_cells": round(timing["cells"], 3),
              "checks": round(total - timing["start"] - timing["cells"], 3),
              "slowest_cells": [[c["cell"], c["seconds"]] for c in slow_cells]}
    release = read_release(release_notebook)
    not_run = [c.metadata["nbgrader"]["grade_id"] for c in release.cells if is_demonstration(c)]
    result = {"assignment": assignment, "notebook": Path(notebook).name, "sandbox": kind, "not_run": not_run,
              "seconds": round(total, 2), "timing": timing, "worker_starts": starts, "task_seconds": task_seconds,
              "fatal": fatal, "cell_errors": load_errors, "tasks": {}, "grading_error": None}
    if plugin.earlier_checks:
        result["earlier_checks"] = sorted(plugin.earlier_checks)
    errors = list(plugin.grading_errors)
    if exit_code not in (None, pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        errors.insert(0, f"the hidden suite of {assignment} could not run (pytest exit status {int(exit_code)}: "
                         f"{exit_code.name}; a test file that does not import, or a missing package such as PyTorch)")
    # From the checks collected, not those recorded: a check that could not run (the sandbox did not
    # start, say) is already a grading error above, and its task does have checks.
    # Nor when the suite did not run at all (that error says why).
    if exit_code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        graded = plugin.collected_tasks
        errors += [f"the hidden suite has no checks for the graded task {t}" for t in points if t not in graded]
        errors += [f"the hidden suite grades {t}, which the release does not grade"
                   for t in sorted(graded - set(points))]
    if errors:
        result["grading_error"] = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
        return result
    for task_id, max_points in points.items():
        checks = [r for r in plugin.records if r["task"] == task_id]
        total = sum(c["weight"] for c in checks)
        passed = sum(c["weight"] for c in checks if c["passed"])
        diagnosis = diagnoser.diagnosis(task_id) if passed < total else None
        result["tasks"][task_id] = {"points": max_points, "score": round(max_points * passed / total, 4),
                                    "checks": checks, "out_of_time": task_id in out_of_time,
                                    "diagnosis": diagnosis.as_dict() if diagnosis else None}
    return result


# Characters per line of the feedback under a graded cell (shown as preformatted text).
FEEDBACK_WIDTH = 100


def feedback_text(task_id: str, graded: dict, width: int = FEEDBACK_WIDTH) -> str:
    """What the student reads under a graded cell: one line per hidden check (a parametrised
    check is one line with its pass count), the first failing case of each in full."""
    checks = graded["checks"]
    passed = sum(1 for c in checks if c["passed"])
    lines = [f"Hidden checks for {task_id}: {passed} of {len(checks)} passed "
             f"({graded['score']:g} / {plural(graded['points'], 'point')})"]
    if graded.get("out_of_time"):
        lines.append(f"  \N{STOPWATCH} {task_id} ran out of its time budget: the checks after that point did not run")
    groups: dict[tuple, list] = {}
    for check in checks:
        groups.setdefault((check.get("test", check["check"]), check["check"]), []).append(check)
    for (_, description), members in groups.items():
        ok = sum(1 for c in members if c["passed"])
        if ok == len(members):
            count = f" ({len(members)} cases)" if len(members) > 1 else ""
            lines.append(f"  \N{CHECK MARK} {description}{count}")
            continue
        first = next(c for c in members if not c["passed"])
        head = f"  \N{BALLOT X} {description}"
        if len(members) > 1:
            head += f": {ok} of {len(members)} passed; first failure"
            head += f" ({first['case']})" if first.get("case") else ""
        lines += textwrap.wrap(head + ":", width=width, subsequent_indent="      ", break_on_hyphens=False)
        lines += textwrap.wrap(first["message"] or "failed", width=width, initial_indent="      ",
                               subsequent_indent="      ", break_long_words=True, break_on_hyphens=False)
    diagnosis = graded.get("diagnosis")
    if diagnosis:
        lines += textwrap.wrap(f"\N{ELECTRIC LIGHT BULB} This looks like a known mistake: {diagnosis['title']}. "
                               f"{diagnosis['explanation']} (See {diagnosis['where']}.)", width=width,
                               initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines) + "\n"


GRADER_MEMORY_SETTING = "COURSE_GRADER_SUITE_MEMORY_MB"
DEFAULT_GRADER_MEMORY_MB = 8192


def cap_grader_memory() -> int | None:
    """Give this grading process a memory cap (RLIMIT_DATA: its heap and anonymous mappings, not
    the shared libraries PyTorch maps), so that grader-side work on a submission's arguments that
    would need more fails with MemoryError, the failure of that check (session.py), instead of
    exhausting the machine. COURSE_GRADER_SUITE_MEMORY_MB sets it (default 8192, generous for the
    suites and PyTorch; 0: no cap). Called where a grading process starts (main, pool's child);
    never lowers a cap already set lower. Returns the cap in bytes, or None."""
    import resource

    from ..sandbox.limits import int_setting

    cap = int_setting(GRADER_MEMORY_SETTING, DEFAULT_GRADER_MEMORY_MB * 1024 ** 2, 1024 ** 2)
    if cap <= 0:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    if soft != resource.RLIM_INFINITY and soft < cap:
        return soft
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    return cap
