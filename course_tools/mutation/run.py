"""Grading mutants with their task's hidden suite, through the normal route; the verdicts.

    outcomes = grade_mutants(mutants, workers=2)       # {mutant id: Outcome}
    table = tally(mutants, outcomes, equivalent_ids())

Each mutant's notebook (the source notebook with one region changed, mutants.py) is graded by
``pool.grade_many`` exactly as ``course grade`` grades a submission: a fork-server child runs
``route.grade_one``, sandbox included. Results are kept in a ResultStore under ``.mutants/``
keyed by ``results.grading_key`` (the notebook's program, the release, the grading bundle), so a
second run grades only what changed.

A mutant is *killed* when its task scores less than its points, *survived* when it keeps them all,
*equivalent* when it survived and ``autograder/equivalent_mutants.toml`` lists it with a reason
(it changes nothing the task's contract promises). A grading error is neither: it is reported,
and the run fails.

``together=True`` grades one mutant of each task in the same notebook (the hidden suites lend the
other tasks' reference where a task's checks use them, lends.py's ``lent_to``). A survivor there
is a survivor; a kill is confirmed by grading that mutant alone whenever another task of the same
notebook lost points too, since a check of one task may call another task's code.
"""
from __future__ import annotations

import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..build import ROOT
from ..grading.launch.pool import grade_many
from ..grading.results import ResultStore, grading_key
from ..grading.settings import GradingSettings
from .mutants import Mutant, notebook_with, write_notebook

STORE = ROOT / ".mutants"
EQUIVALENT = ROOT / "autograder" / "equivalent_mutants.toml"


@dataclass(frozen=True)
class Outcome:
    verdict: str          # "killed", "survived" or "error"
    score: float = 0.0    # the mutated task's score
    points: float = 0.0   # ... out of
    failed: tuple = ()    # the names of its failed checks
    why: str = ""         # for "error": the grading error


def equivalent_ids(path: Path = EQUIVALENT) -> dict[str, str]:
    """Mutant id -> why it is equivalent, from the committed list."""
    if not path.exists():
        return {}
    listed = tomllib.loads(path.read_text()).get("equivalent", [])
    for entry in listed:
        if not {"id", "change", "reason"} <= set(entry) or not entry["reason"].strip():
            raise ValueError(f"{path.name}: every entry needs id, change and a reason: {entry}")
    return {entry["id"]: entry["reason"] for entry in listed}


def _outcome(result: dict, task: str) -> Outcome:
    if result.get("grading_error") or task not in result.get("tasks", {}):
        return Outcome("error", why=result.get("grading_error") or f"no result for {task}")
    graded = result["tasks"][task]
    failed = tuple(c["test"] + (f"[{c['case']}]" if c["case"] else "") for c in graded["checks"] if not c["passed"])
    verdict = "killed" if graded["score"] < graded["points"] else "survived"
    return Outcome(verdict, graded["score"], graded["points"], failed)


def _grade(notebooks: list[tuple[object, str, object]], workers: int, settings: GradingSettings,
           store: ResultStore) -> dict:
    """Grade (tag, assignment, notebook node) jobs, from the store where it has them; tag -> result."""
    results, pending = {}, []
    with tempfile.TemporaryDirectory(prefix="course-mutants-") as folder:
        for n, (tag, assignment, nb) in enumerate(notebooks):
            key = grading_key(assignment, nb)
            stored = store.get(assignment, key)
            if stored is not None:
                results[tag] = stored
            else:
                pending.append((tag, assignment, write_notebook(nb, Path(folder), f"mutant-{n}"), key))
        keys = {tag: (assignment, key) for tag, assignment, _, key in pending}
        for tag, result in grade_many([(t, a, p) for t, a, p, _ in pending], workers, settings):
            if not result.get("grading_error"):
                store.put(*keys[tag], result)
            results[tag] = result
    return results


def _batches(mutants: list[Mutant]) -> list[list[Mutant]]:
    """Mutants packed so that no batch has two of one task (one notebook per batch)."""
    batches: list[list[Mutant]] = []
    for mutant in mutants:
        for batch in batches:
            if batch[0].assignment == mutant.assignment and all(m.task != mutant.task for m in batch):
                batch.append(mutant)
                break
        else:
            batches.append([mutant])
    return batches


def grade_mutants(mutants: list[Mutant], workers: int = 2, settings: GradingSettings | None = None,
                  together: bool = False, store: ResultStore | None = None, confirm: bool = True) -> dict[str, Outcome]:
    """Each mutant's outcome, by id (see the module docstring). ``confirm=False`` keeps a together
    grading's kills unconfirmed: cheaper, and a kill may then be another task's doing."""
    settings = settings or GradingSettings.current()
    store = store or ResultStore(STORE)
    batches = _batches(mutants) if together else [[m] for m in mutants]
    results = _grade([(i, b[0].assignment, notebook_with(b[0].assignment, b)) for i, b in enumerate(batches)],
                     workers, settings, store)
    outcomes, unconfirmed = {}, []  # (not named `confirm`: that list shadowed the flag, and was empty, so no kill was confirmed)
    for i, batch in enumerate(batches):
        found = {m.id: _outcome(results[i], m.task) for m in batch}
        lost = [m for m in batch if found[m.id].verdict == "killed"]
        for mutant in batch:
            if confirm and len(batch) > 1 and len(lost) > 1 and found[mutant.id].verdict == "killed":
                unconfirmed.append(mutant)
            else:
                outcomes[mutant.id] = found[mutant.id]
    if unconfirmed:
        alone = _grade([(m.id, m.assignment, notebook_with(m.assignment, [m])) for m in unconfirmed],
                       workers, settings, store)
        outcomes.update({m.id: _outcome(alone[m.id], m.task) for m in unconfirmed})
    return outcomes


def tally(mutants: list[Mutant], outcomes: dict[str, Outcome], equivalent: dict[str, str]) -> dict[str, dict]:
    """Per task: mutants, killed, survived (not listed as equivalent), equivalent, errors, and the
    fraction killed of the non-equivalent ones."""
    table: dict[str, dict] = {}
    for mutant in mutants:
        row = table.setdefault(mutant.task, {"assignment": mutant.assignment, "mutants": 0, "killed": 0,
                                             "survived": 0, "equivalent": 0, "errors": 0})
        row["mutants"] += 1
        verdict = outcomes[mutant.id].verdict
        if verdict == "survived" and mutant.id in equivalent:
            verdict = "equivalent"
        row[{"killed": "killed", "survived": "survived", "equivalent": "equivalent", "error": "errors"}[verdict]] += 1
    for row in table.values():
        judged = row["killed"] + row["survived"]
        row["killed_fraction"] = round(row["killed"] / judged, 3) if judged else 1.0
    return table
