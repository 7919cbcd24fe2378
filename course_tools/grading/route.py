"""The one route into the hidden suites: ``grade_one``, and what every launcher shares.

    grade_one(assignment, notebook, settings)   grade in this process; never raises
    time_limit(assignment, settings)            how long a launcher lets that process run
    grading_error(assignment, why)              the result of a grading the grader could not do
    result_key(assignment, notebook, settings)  the key results are stored under (results.py)

Both grade against the release version the notebook belongs to when ``settings.course_root``
keeps versions (target.py, course_tools/release_versions.py), so every caller gets it.

Launchers start a process that calls ``grade_one`` and enforce ``time_limit`` on it:

    pool.grade_many          processes forked from a warm fork server   (course grade --workers N)
    runner.grade_in_process  a fresh ``python -m course_tools.grading.suite``   (nbgrader's plugin)
    on_dask.grade_text       a Dask task, forked from its worker's warm server  (course grade --scheduler)

A grading error (a grader that failed, a process that died or ran past its limit) is reported
and never stored as a score: ``is_stored_score`` says whether a result may be.

"Stored result, else grade, then store", the same for every caller (the service's worker, the
fan-out of `course grade`, nbgrader's plugin), each with the settings of the submission
(``GradingSettings.for_submission``: the version the student was given is part of the key):

    stored_result(store, assignment, notebook, settings)   (key, the result stored under it or None)
    keep_result(store, assignment, key, result, students)  store a score (never a grading error)
    graded_once(store, assignment, notebook, settings, grade)  both, around one call of ``grade``
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

from .results import ResultStore, key_of_file
from .settings import GradingSettings


def grading_error(assignment: str, why: str) -> dict:
    """A result with no scores: the grader, not the student, failed."""
    return {"assignment": assignment, "tasks": {}, "grading_error": why}


def unmatched(assignment: str, err: Exception) -> dict:
    """The grading error of a notebook that matches no stored release version (VersionError)."""
    return grading_error(assignment, f"not graded against any release: {err}")


def is_stored_score(result: dict) -> bool:
    """Whether ``result`` holds scores (and not a grading error) and may be stored."""
    return not result.get("grading_error") and bool(result.get("tasks"))


def time_limit(assignment: str, settings: GradingSettings) -> int:
    """The wall time a launcher allows one grading of ``assignment`` before it kills it."""
    from ..build import release_notebook
    from .suite.run import graded_tasks

    return settings.time_limit(len(graded_tasks(release_notebook(assignment))))


def result_key(assignment: str, notebook: Path, settings: GradingSettings | None = None) -> str | None:
    """The key a grading of ``notebook`` with ``settings`` is stored under (None: not a readable
    notebook). It names the release version graded against (target.py); a notebook that matches
    no version gets a key of its own, so that grading it reports why."""
    from ..release_versions import VersionError
    from .target import target_of

    try:
        target = target_of(assignment, Path(notebook), settings or GradingSettings())
    except VersionError as err:
        return key_of_file(assignment, notebook, extra={"version_error": str(err)})
    return key_of_file(assignment, notebook, target.release_notebook, extra=target.version)


def grade_one(assignment: str, notebook: Path, settings: GradingSettings, release_notebook: Path | None = None,
              suite_dir: Path | None = None, target=None) -> dict:
    """Grade one notebook with its hidden suite, in this process, against the release version
    the notebook belongs to (target.py; ``release_notebook`` given: against that release;
    ``target`` given: the target.Target the grader decided, as a Dask worker gets it with its task,
    launch/shipped.py). Never raises: the student's failures are in the scores, the grader's own in
    ``grading_error``, and so is a notebook that matches no release version (with the reason)."""
    from ..release_versions import VersionError
    from .suite.run import run_suite
    from .target import Target, target_of

    try:
        if target is None:
            target = Target() if release_notebook is not None else target_of(assignment, Path(notebook), settings)
        result = run_suite(assignment, Path(notebook), release_notebook or target.release_notebook,
                           suite_dir=suite_dir, settings=settings, student_lib=target.course_lib)
        if target.version:
            result["version"] = target.version
        return result
    except VersionError as err:
        return unmatched(assignment, err)
    except BaseException as err:  # noqa: BLE001 - the grader's own failure: a grading error
        if isinstance(err, KeyboardInterrupt):
            raise
        return grading_error(assignment, f"the grader failed on this notebook ({type(err).__name__}: {str(err)[:300]})")


def stored_result(store: ResultStore, assignment: str, notebook: Path, settings: GradingSettings,
                  student: str | None = None) -> tuple[str | None, dict | None]:
    """(the key a grading of ``notebook`` with ``settings`` is stored under, the result stored
    under it). The result is None when nothing is stored yet, the key None when the file is not a
    readable notebook. A stored result found for ``student`` is noted as theirs."""
    key = result_key(assignment, notebook, settings)
    result = store.get(assignment, key) if key is not None else None
    if result is not None and student:
        store.remember(assignment, student, key)
    return key, result


def keep_result(store: ResultStore, assignment: str, key: str | None, result: dict,
                students: Iterable[str] = ()) -> bool:
    """Store ``result`` under ``key`` if it holds scores, and note it as each student's; a grading
    error (or an unreadable notebook's missing key) is never stored. Whether it was."""
    if key is None or not is_stored_score(result):
        return False
    store.put(assignment, key, result)
    for student in students:
        store.remember(assignment, student, key)
    return True


def graded_once(store: ResultStore, assignment: str, notebook: Path, settings: GradingSettings,
                grade: Callable[[str, Path, GradingSettings], dict], student: str | None = None) -> dict:
    """The stored result of ``notebook``'s program, else ``grade(assignment, notebook, settings)``
    (a launcher), stored when it is a score. A grading error comes back and is not stored."""
    key, result = stored_result(store, assignment, notebook, settings, student)
    if result is not None:
        return result
    result = grade(assignment, notebook, settings)
    keep_result(store, assignment, key, result, [student] if student else ())
    return result
