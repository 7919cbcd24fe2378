"""A student never gets a better grade by making their notebook look like another release version
than the one they were given (issue 35): through the exchange, `course serve`, `course collect`
and `course grade` with nbgrader's autograde.

One course, 01_forward_ops in three versions, recorded as `course release` records them, in order:

    v1  a release before matmul was added: today's release without the cells of forward_matmul
    v2  today's notebook with a student course_lib that, by the release's mistake, holds the
        reference code (as a course_lib-only release can)
    v3  today's release, through `course release` (it fixes v2's course_lib)

    ada   submits v1's notebook, solved, before v2 is released: an honest v1 student
    ben   after v3 is released, hands in today's solved notebook with the cells of forward_matmul
          deleted: his locked cells are v1's exactly
    cleo  after v3 is released, hands in the blank release with its code cells deleted and
          labelled v2: her cells fit v2 and v3 alike, and v2's course_lib would answer every task
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from conftest import gradebook_task_scores
from course_tools import release_versions, version_given
from course_tools.build import ROOT, release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course
from course_tools.demo_class import DemoClass, blank, filled_release
from course_tools.grading.results import ResultStore
from course_tools.grading.suite.run import graded_tasks
from grading_support import require_sandbox
from service_support import ASSIGNMENT, drop, page_of, rows, serve

NOTEBOOK = f"{ASSIGNMENT}.ipynb"
ADDED = "forward_matmul"                                     # the task v2 added to v1
ADDED_CELLS = {"matmul_md", f"{ADDED}_code", ADDED}          # its heading, code cell and test cell
POINTS = graded_tasks(release_notebook(ASSIGNMENT))


def _without(nb: nbformat.NotebookNode, grade_ids: set[str]) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in grade_ids]
    return nb


def _labelled(nb: nbformat.NotebookNode, label: str) -> nbformat.NotebookNode:
    nb.metadata.setdefault("course", {})[release_versions.LABEL_KEY] = label
    return nb


def _release_folder(base: Path, name: str, nb: nbformat.NotebookNode, course_lib: Path) -> Path:
    folder = base / name
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / NOTEBOOK))
    shutil.copytree(course_lib, folder / "course_lib", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return folder


def _code_cells_deleted(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return _without(nb, {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells
                         if str(c.metadata.get("nbgrader", {}).get("grade_id", "")).endswith("_code")})


@pytest.fixture(scope="module")
def given(tmp_path_factory):
    """The course after `course serve --once`, `course collect` and `course grade`: (demo, outputs)."""
    require_sandbox()
    base = tmp_path_factory.mktemp("given")
    demo = DemoClass(base, ASSIGNMENT, personas=[])
    init_course(demo.course_dir, "demo", demo.exchange)  # `course init` without building the student install
    # inbound/ as nbgrader's release makes it (02733: nobody lists it), before the release, for
    # ada's v1 submission; `course serve` refuses a listable one.
    (demo.exchange / "demo" / "inbound").mkdir(parents=True, exist_ok=True)
    (demo.exchange / "demo" / "inbound").chmod(0o2733)
    today = release_notebook(ASSIGNMENT)
    releases = base / "releases"
    v1 = _release_folder(releases, "v1", _without(blank(ASSIGNMENT), ADDED_CELLS), today.parent / "course_lib")
    release_versions.record(demo.course_dir, ASSIGNMENT, v1)
    drop(demo, "ada", _labelled(_without(filled_release(ASSIGNMENT), ADDED_CELLS), "v1"))
    time.sleep(1.2)  # versions are recorded to the second
    leaky = _release_folder(releases, "v2", blank(ASSIGNMENT), ROOT / "course_lib")
    release_versions.record(demo.course_dir, ASSIGNMENT, leaky)
    time.sleep(1.2)
    assert course(["release", ASSIGNMENT, "--course", str(demo.course_dir), "--yes"]) == 0
    assert [v.label for v in release_versions.versions(demo.course_dir, ASSIGNMENT)] == ["v1", "v2", "v3"]
    time.sleep(1.2)
    drop(demo, "ben", _labelled(_without(filled_release(ASSIGNMENT), ADDED_CELLS), "v1"))
    drop(demo, "cleo", _labelled(_code_cells_deleted(blank(ASSIGNMENT)), "v2"))
    serve(demo, "--once", "--workers", "2")
    folder = str(demo.course_dir)
    assert course(["collect", ASSIGNMENT, "--course", folder]) == 0
    assert course(["grade", ASSIGNMENT, "--course", folder, "--workers", "2"]) == 0
    served = {r["student"]: r for r in rows(demo)}
    with Course(demo.course_dir).gradebook() as gradebook:
        book = gradebook_task_scores(gradebook, ASSIGNMENT, POINTS)
    store = ResultStore(demo.course_dir)
    results = {s: store.get(ASSIGNMENT, store.key_of_student(ASSIGNMENT, s)) for s in ("ada", "ben", "cleo")}
    return demo, served, book, results


def _scores(row: dict) -> dict:
    return {task: tuple(pair) for task, pair in json.loads(row["scores"]).items()}


@pytest.mark.slow
def test_a_v3_student_who_deletes_the_cells_of_a_task_v3_added_gets_nothing_for_it(given):
    demo, served, book, results = given
    full = {task: (p, p) for task, p in POINTS.items()}
    assert _scores(served["ben"]) == {**full, ADDED: (0, POINTS[ADDED])}  # graded on v3: the task is there, undone
    page = page_of(demo, served["ben"])
    assert "Graded against release v3 of 01_forward_ops, the release you were given" in page
    assert f"{ADDED} is a task of release v3, and its cells are missing from your notebook" in page
    assert results["ben"]["version"]["graded"] == "v3" and results["ben"]["version"]["own"] == "v1"
    assert book["ben"] == {**POINTS, ADDED: 0}  # nbgrader's gradebook: a zero, not a share of the rest


@pytest.mark.slow
def test_a_label_choosing_among_versions_the_cells_fit_alike_gets_no_advantage(given):
    demo, served, book, results = given
    assert {task: score for task, (score, _) in _scores(served["cleo"]).items()} == {t: 0 for t in POINTS}
    assert results["cleo"]["version"]["graded"] == "v3"
    assert "a label never decides" in page_of(demo, served["cleo"])
    assert book["cleo"] == {t: 0 for t in POINTS}


@pytest.mark.slow
def test_an_honest_v1_student_is_graded_on_v1_and_the_task_v1_lacks_counts_at_her_rate(given):
    demo, served, book, results = given
    v1_tasks = {t: p for t, p in POINTS.items() if t != ADDED}
    assert _scores(served["ada"]) == {t: (p, p) for t, p in v1_tasks.items()}
    assert results["ada"]["version"] == {"graded": "v1", "own": "v1", "latest": "v3", "policy": "own"}
    assert book["ada"] == POINTS  # forward_matmul at her rate on v1's tasks: full


def test_ties_never_go_to_the_label_and_the_course_remembers_what_a_student_had(tmp_path):
    """Cheap (no grading): versions that differ only in their course_lib; the evidence file."""
    today = release_notebook(ASSIGNMENT)
    v1 = release_versions.record(tmp_path, ASSIGNMENT, today.parent)
    time.sleep(1.1)
    v2 = release_versions.record(tmp_path, ASSIGNMENT,
                                 _release_folder(tmp_path / "r", "v2", blank(ASSIGNMENT), ROOT / "course_lib"))
    stored = release_versions.versions(tmp_path, ASSIGNMENT)
    for label in ("v1", "v2", None):
        nb = _labelled(blank(ASSIGNMENT), label) if label else blank(ASSIGNMENT)
        assert release_versions.match(stored, NOTEBOOK, nb).label == "v2"          # nothing known: the newest
        assert release_versions.match(stored, NOTEBOOK, nb, given=v1).label == "v1"  # what the student had
    # before v2: nothing but v1 was out; after: v2. A later submission never lowers what is known.
    early = version_given.utc(v1.manifest["recorded"]).replace(microsecond=500_000)
    assert version_given.given(tmp_path, ASSIGNMENT, "ada", early).version.label == "v1"
    version_given.note(tmp_path, ASSIGNMENT, "ada", submitted=early, version=v1)
    assert version_given.given(tmp_path, ASSIGNMENT, "ada", "2999-01-01T00:00:00").version.label == "v1"
    assert version_given.given(tmp_path, ASSIGNMENT, "ben", "2999-01-01T00:00:00").version.label == "v2"
    version_given.note(tmp_path, ASSIGNMENT, "ada", version=v2)
    version_given.note(tmp_path, ASSIGNMENT, "ada", submitted="2999-01-01T00:00:00", version=v1)
    known = version_given.given(tmp_path, ASSIGNMENT, "ada")
    assert (known.version.label, known.by) == ("v2", "submitted")
    assert version_given.given(tmp_path, ASSIGNMENT, None, early) is None
