"""Grading a whole class at once: the hidden suites of many notebooks in parallel.

    local:  N grading processes on this machine (`course grade ID --workers N`)
    Dask:   tasks on an existing Dask cluster (`course grade ID --scheduler tcp://host:8786`),
            each forked from its worker's warm fork server (on_dask.py); each worker needs the
            same commit of the course installed (checked by fingerprint), not the course
            folder: a notebook travels as text with the release version it is graded against
            (shipped.py), its result comes back as JSON.

Results land in the ResultStore, from which nbgrader's autograde (HiddenSuiteGrader) then
takes them. Notebooks whose programs are identical (ten untouched blank releases, say) share
a key and are graded once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from .pool import grade_many
from ...release_versions import VersionError
from ..results import ResultStore, bundle_fingerprint
from ..route import is_stored_score, keep_result, stored_result, unmatched
from ..settings import GradingSettings


@dataclass(frozen=True)
class Job:
    """One submitted notebook: submitted/<student>/<assignment>/<notebook>."""
    student: str
    assignment: str
    notebook: Path
    # When the course received it (its collected timestamp.txt); with the student, the evidence of
    # which release version they were given (target.py). anonymous: no student's (the blank release).
    submitted: str | None = None
    anonymous: bool = False

    def settings(self, settings: GradingSettings) -> GradingSettings:
        """``settings`` for this job's submission (GradingSettings.for_submission)."""
        return settings.for_submission(None if self.anonymous else self.student, self.submitted)


@dataclass
class FanoutReport:
    graded: int = 0       # distinct programs graded now
    reused: int = 0       # notebooks whose result was already stored
    unreadable: int = 0   # not notebooks: left for nbgrader, where the student gets told why
    failed: list = field(default_factory=list)  # (job, why): grading errors, the grader failed, not the student


def grade_jobs(jobs: list[Job], store: ResultStore, settings: GradingSettings, workers: int = 1,
               scheduler: str | None = None, progress: bool = True) -> FanoutReport:
    """Grade every job whose result is not stored yet, ``workers`` at a time (or on Dask), each
    through route.grade_one with ``settings``. A grading error is reported in ``failed`` (every
    job of that program) and never stored."""
    report = FanoutReport()
    todo: dict[str, list[Job]] = {}
    for job in jobs:
        key, stored = stored_result(store, job.assignment, job.notebook, job.settings(settings), job.student)
        if key is None:
            report.unreadable += 1
        elif stored is not None:
            report.reused += 1
        else:
            todo.setdefault(key, []).append(job)
    if not todo:
        return report
    bar = tqdm(total=len(todo), desc="hidden suites", unit="notebook", disable=not progress)
    try:
        if scheduler:
            outcomes = _on_dask(todo, scheduler, settings, max(1, workers))
        else:
            outcomes = _locally(todo, max(1, workers), settings)
        for key, job, result, problem in outcomes:
            bar.set_postfix_str(job.student)
            bar.update(1)
            problem = problem or result.get("grading_error") or (None if is_stored_score(result) else "no result")
            if problem is None:
                keep_result(store, job.assignment, key, result, [same.student for same in todo[key]])
                report.graded += 1
            else:
                report.failed += [(same, problem) for same in todo[key]]
    finally:
        bar.close()
    return report


def _locally(todo: dict[str, list[Job]], workers: int, settings: GradingSettings):
    # Each notebook in a fresh process forked from a warm fork server (pool.py).
    jobs = [((key, group[0]), group[0].assignment, group[0].notebook, group[0].settings(settings))
            for key, group in todo.items()]
    for (key, job), result in grade_many(jobs, workers, settings):
        yield key, job, result, None


def _on_dask(todo: dict[str, list[Job]], scheduler: str, settings: GradingSettings, workers: int):
    from .on_dask import connected, submit

    fingerprint = bundle_fingerprint()
    with connected(scheduler, workers) as client:
        from distributed import as_completed

        futures = {}
        for key, jobs in todo.items():
            job = jobs[0]
            try:   # with the release version it is graded against: the workers need no course folder
                future = submit(client, job.assignment, job.notebook, job.settings(settings), fingerprint,
                                key=f"grade-{job.assignment}-{key[:16]}")
            except VersionError as err:
                yield key, job, unmatched(job.assignment, err), None
                continue
            futures[future] = (key, job)
        for future in as_completed(futures):
            key, job = futures[future]
            try:
                yield key, job, future.result(), None
            except Exception as err:  # noqa: BLE001 - a worker's failure is reported per notebook
                yield key, job, {}, f"{type(err).__name__}: {err}"
