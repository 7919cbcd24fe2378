"""Calibration of the hidden suites: solutions score full marks, blank releases zero, realistic
wrong submissions lose exactly the tasks they break, hostile ones get what they deserve."""
import copy
import hashlib
import importlib
import json
import random
from pathlib import Path

import nbformat
import pytest

from course_lib import tasks
from course_tools.build import release_notebook
from course_tools.demo_class import apply_edits
from course_tools.grading.sandbox import sandbox_kind
from course_tools.grading.suite import feedback_text, graded_tasks, run_suite
from fixtures.hostile_submissions import HOSTILE

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = list(tasks.ASSIGNMENTS)
WITH_SUITES = [a for a in ASSIGNMENTS if (ROOT / "autograder" / a).is_dir()]
FAST = dict(cell_timeout=60, call_timeout=20, load_timeout=240)
HOSTILE_LIMITS = dict(cell_timeout=5, call_timeout=5, load_timeout=20)


def _source(assignment):
    return nbformat.read(str(ROOT / "source" / assignment / f"{assignment}.ipynb"), as_version=4)


def _grade(assignment, nb, tmp_path, name="submission", course_root=None, **options):
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, str(path))
    return run_suite(assignment, path, course_root=course_root, **{**FAST, **options})


def _scores(result):
    return {task: (graded["score"], graded["points"]) for task, graded in result["tasks"].items()}


def _wrong_catalogue():
    cases = []
    for assignment in ASSIGNMENTS:
        path = ROOT / "tests" / "fixtures" / "wrong_submissions" / f"{assignment}.py"
        if path.exists():
            module = importlib.import_module(f"fixtures.wrong_submissions.{assignment}")
            cases += [pytest.param(assignment, case, id=f"{assignment}-{case['name']}") for case in module.WRONG]
    return cases


def test_every_assignment_has_a_suite_and_three_wrong_submissions():
    assert WITH_SUITES == ASSIGNMENTS
    counts = {a: sum(1 for p in _wrong_catalogue() if p.values[0] == a) for a in ASSIGNMENTS}
    assert all(n >= 3 for n in counts.values()), counts


@pytest.mark.parametrize("assignment", WITH_SUITES)
def test_solution_scores_full_marks(assignment, tmp_path):
    result = _grade(assignment, _source(assignment), tmp_path)
    assert result["fatal"] is None and result["cell_errors"] == []
    missing = {t: s for t, s in _scores(result).items() if s[0] != s[1]}
    assert not missing, {t: feedback_text(t, result["tasks"][t]) for t in missing}


@pytest.mark.parametrize("assignment", WITH_SUITES)
def test_blank_release_scores_zero(assignment, tmp_path):
    blank = nbformat.read(str(release_notebook(assignment)), as_version=4)
    result = _grade(assignment, blank, tmp_path)
    assert set(result["tasks"]) == set(graded_tasks(release_notebook(assignment)))
    assert all(score == 0 for score, _ in _scores(result).values()), _scores(result)


@pytest.mark.parametrize("assignment,case", _wrong_catalogue())
def test_wrong_submission_loses_exactly_the_tasks_it_breaks(assignment, case, tmp_path):
    result = _grade(assignment, apply_edits(_source(assignment), case["edits"]), tmp_path)
    scores = _scores(result)
    lost = sorted(t for t, (score, points) in scores.items() if score < points)
    assert lost == sorted(case["breaks"]), (case["description"], scores)


# ---------------------------------------------------------------------------- hostile submissions
def _inject(nb, code):
    """The notebook with ``code`` as its last cell (after the student's solutions, so it can replace them)."""
    nb = copy.deepcopy(nb)
    nb.cells.append(nbformat.v4.new_code_cell(code))
    return nb


def _make_hostile(case, course: Path, root: Path):
    nb = _source("01_forward_ops")
    if "inject" in case:
        nb = _inject(nb, case["inject"].replace("{root}", str(root)).replace("{course}", str(course)))
    if "kernelspec" in case:
        nb.metadata.kernelspec = case["kernelspec"]
    if case.get("shuffle_graded_cells"):
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        others = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]
        random.Random(0).shuffle(tests)
        nb.cells = others + tests[: len(tests) // 2] + tests[:2]  # half deleted, two duplicated, order changed
    if case.get("edit_graded_metadata"):
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                meta["points"] = 1000
                meta["grade"] = False
                cell.source = "assert True"
    return nb


@pytest.mark.parametrize("case", HOSTILE, ids=[c["name"] for c in HOSTILE])
def test_hostile_submission_gets_what_it_deserves(case, tmp_path):
    if case.get("needs_bubblewrap") and sandbox_kind() != "bubblewrap":
        pytest.skip("hiding files needs bubblewrap (apt-get install bubblewrap); the fallback only limits resources")
    course = tmp_path / "course"
    other = course / "submitted" / "other" / "01_forward_ops"
    other.mkdir(parents=True)
    (other / "01_forward_ops.ipynb").write_text('{"other student": true}')
    (course / "gradebook.db").write_bytes(b"a gradebook")
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in course.rglob("*") if p.is_file()}
    path = tmp_path / "01_forward_ops.ipynb"
    if "raw_text" in case:
        path.write_text(case["raw_text"])
    elif not case.get("missing"):
        nbformat.write(_make_hostile(case, course, ROOT), str(path))
    result = run_suite("01_forward_ops", path, course_root=course, **HOSTILE_LIMITS)
    scores = _scores(result)
    expect = case["expect"]
    if expect == "full":
        assert all(s == p for s, p in scores.values()), scores
    elif expect == "zero":
        assert all(s == 0 for s, _ in scores.values()), scores
    else:
        lost = sorted(t for t, (s, p) in scores.items() if s < p)
        assert lost == sorted(expect["lose"]), scores
    if "message" in case:
        text = json.dumps(result)
        assert case["message"] in text, text[:2000]
    if "variable_must_not_contain" in case:
        from course_tools.grading.session import StudentSession

        name, forbidden = case["variable_must_not_contain"]
        with StudentSession("01_forward_ops", path, course_root=course, **HOSTILE_LIMITS) as session:
            stolen = json.dumps(session.variable(name))
        assert not any(word in stolen for word in forbidden), stolen[:500]
    after = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in course.rglob("*") if p.is_file()}
    assert after == before, "the submission changed files of the course"


def test_feedback_names_checks_but_never_shows_hidden_test_code(tmp_path):
    nb = apply_edits(_source("01_forward_ops"), {})
    result = _grade("01_forward_ops", _inject(nb, (
        "from course_lib.student import implements\nfrom course_lib import ops\n"
        "@implements(ops.Log, 'compute')\ndef compute(self, a):\n    return a")), tmp_path)
    text = "".join(feedback_text(t, g) for t, g in result["tasks"].items())
    assert "\N{BALLOT X}" in text and "Log" in text
    hidden = [line.strip() for p in (ROOT / "autograder").rglob("*.py") for line in p.read_text().splitlines()
              if len(line.strip()) > 25 and not line.strip().startswith(('"""', "#"))]
    leaked = [line for line in hidden if line in text]
    assert not leaked, leaked[:3]


# Not kill_the_parent: where the fallback cannot drop to nobody (this interpreter lives under
# /root), the worker could signal the grader, which here is the test process itself. In
# production the grader is a subprocess of nbgrader's, so that costs only that submission.
FALLBACK_CASES = ["infinite_loop_in_a_cell", "memory_bomb", "fork_bomb", "os_exit"]


@pytest.mark.parametrize("name", FALLBACK_CASES)
def test_the_fallback_sandbox_still_contains_resource_attacks(name, tmp_path, monkeypatch):
    """Without bubblewrap (COURSE_GRADER_NO_BWRAP=1) the limits and the cgroup still hold."""
    monkeypatch.setenv("COURSE_GRADER_NO_BWRAP", "1")
    assert sandbox_kind() == "rlimits"
    case = next(c for c in HOSTILE if c["name"] == name)
    course = tmp_path / "course"
    course.mkdir()
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(_make_hostile(case, course, ROOT), str(path))
    result = run_suite("01_forward_ops", path, course_root=course, **HOSTILE_LIMITS)
    scores = _scores(result)
    if case["expect"] == "full":
        assert all(s == p for s, p in scores.values()), scores
    else:
        assert all(s == 0 for s, _ in scores.values()), scores
