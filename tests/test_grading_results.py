"""The pieces under `course grade`: result keys, the store, the late policy (the submission clock: test_exchange_inbound.py)."""
from __future__ import annotations

import nbformat
import pytest

from course_tools.demo_class import blank, filled_release
from course_tools.grading.results import ResultStore, bundle_fingerprint, grading_key
from course_tools.late_penalty import PercentPerDay

ASSIGNMENT = "01_forward_ops"


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_key_follows_the_program_the_worker_runs():
    solution = filled_release(ASSIGNMENT)
    key = grading_key(ASSIGNMENT, solution)
    assert grading_key(ASSIGNMENT, filled_release(ASSIGNMENT)) == key          # same code, same key
    assert grading_key(ASSIGNMENT, blank(ASSIGNMENT)) != key

    outputs_only = filled_release(ASSIGNMENT)                                   # outputs are not code
    _cell(outputs_only, "forward_negate_code").outputs = [nbformat.v4.new_output("stream", text="hi")]
    assert grading_key(ASSIGNMENT, outputs_only) == key

    edited = filled_release(ASSIGNMENT)
    _cell(edited, "forward_negate_code").source += "\n# a comment is code too"
    assert grading_key(ASSIGNMENT, edited) != key

    locked = filled_release(ASSIGNMENT)  # a retyped locked cell runs as released: same key
    cell = next(c for c in locked.cells if c.metadata.get("nbgrader", {}).get("locked")
                and not c.metadata["nbgrader"].get("grade") and c.cell_type == "code")
    cell.source = "import os; os._exit(1)"
    assert grading_key(ASSIGNMENT, locked) == key


def test_key_changes_with_the_grading_bundle(tmp_path):
    (tmp_path / "autograder").mkdir()
    (tmp_path / "autograder" / "test_a.py").write_text("x = 1\n")
    before = bundle_fingerprint(tmp_path)
    (tmp_path / "autograder" / "test_a.py").write_text("x = 2\n")
    bundle_fingerprint.cache_clear()
    assert bundle_fingerprint(tmp_path) != before


def test_store_round_trips_and_clears(tmp_path):
    store = ResultStore(tmp_path)
    assert store.get(ASSIGNMENT, "k" * 64) is None and store.get(ASSIGNMENT, None) is None
    store.put(ASSIGNMENT, "k" * 64, {"tasks": {"forward_negate": {"score": 1}}})
    assert store.get(ASSIGNMENT, "k" * 64)["tasks"]["forward_negate"]["score"] == 1
    assert not list(store.folder.rglob(".writing-*"))                          # written atomically
    assert store.clear(ASSIGNMENT) == 1 and store.get(ASSIGNMENT, "k" * 64) is None


def test_the_release_is_parsed_once_per_version_of_its_file_and_each_reader_gets_its_own_copy(tmp_path, monkeypatch):
    from course_tools.grading import release

    path = tmp_path / f"{ASSIGNMENT}.ipynb"
    nbformat.write(blank(ASSIGNMENT), str(path))
    parses = []
    real = nbformat.read
    monkeypatch.setattr(release.nbformat, "read", lambda *a, **k: parses.append(str(a[0])) or real(*a, **k))
    first, second = release.read_release(path), release.read_release(str(path))
    assert first == second == real(str(path), as_version=4) and parses.count(str(path)) == 1
    first.cells.clear()                                                # one reader's change stays its own
    assert release.read_release(path).cells and parses.count(str(path)) == 1
    second.cells.pop()
    nbformat.write(second, str(path))                                  # a new build: parsed again
    assert len(release.read_release(path).cells) == len(second.cells) and parses.count(str(path)) == 2


def test_a_stored_result_is_graded_once_and_a_grading_error_never_stored(tmp_path):
    """graded_once (route.py), the one "stored result, else grade, then store" of the service, the
    fan-out and nbgrader's plugin: ``grade`` stands for a launcher and counts its calls."""
    from course_tools.grading.route import graded_once, stored_result
    from course_tools.grading.settings import GradingSettings

    store, settings, calls = ResultStore(tmp_path / "store"), GradingSettings(), []
    notebook = tmp_path / f"{ASSIGNMENT}.ipynb"
    nbformat.write(filled_release(ASSIGNMENT), str(notebook))
    answers = [{"assignment": ASSIGNMENT, "tasks": {}, "grading_error": "the grader failed"},
               {"assignment": ASSIGNMENT, "tasks": {"forward_negate": {"score": 1.0}}}]

    def grade(assignment, path, given):
        calls.append((assignment, path, given))
        return answers[len(calls) - 1]

    assert graded_once(store, ASSIGNMENT, notebook, settings, grade, "alice")["grading_error"]
    key, stored = stored_result(store, ASSIGNMENT, notebook, settings)
    assert key is not None and stored is None                          # the error was not stored
    assert store.key_of_student(ASSIGNMENT, "alice") is None       # an error is nobody's result
    assert graded_once(store, ASSIGNMENT, notebook, settings, grade, "alice") == answers[1]
    assert graded_once(store, ASSIGNMENT, notebook, settings, grade, "bob") == answers[1]  # stored: not graded
    assert len(calls) == 2 and calls[0] == (ASSIGNMENT, notebook, settings)
    assert store.key_of_student(ASSIGNMENT, "alice") == key == store.key_of_student(ASSIGNMENT, "bob")
    (tmp_path / "not-a-notebook.ipynb").write_text("{ not json")
    assert graded_once(store, ASSIGNMENT, tmp_path / "not-a-notebook.ipynb", settings,
                       lambda *_: answers[1]) == answers[1]        # graded, and no key to file it under
    assert store.clear(ASSIGNMENT) == 1                                # alice's and bob's one result


@pytest.mark.parametrize("seconds,percent", [(0, 0), (1, 10), (86400, 10), (86401, 20), (30 * 86400, 100)])
def test_late_penalty_is_ten_percent_per_started_day(seconds, percent):
    plugin = PercentPerDay()
    penalty = plugin.late_submission_penalty("s", 20.0, seconds)
    assert (penalty or 0.0) == pytest.approx(20.0 * percent / 100)
