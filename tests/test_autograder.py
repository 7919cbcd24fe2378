"""Calibration of the hidden suites: solutions score full marks, blank releases zero, realistic
wrong submissions lose exactly the tasks they break, and a task left as its stub costs that task
and no other (each task is graded on its own)."""

import nbformat
import pytest

from course_lib import tasks
from course_tools.build import release_notebook
from course_tools.grading.suite.run import feedback_text, graded_tasks
from grading_support import ROOT, grade, graded, inject, require_sandbox, scores, source, wrong_catalogue

require_sandbox()

ASSIGNMENTS = list(tasks.ASSIGNMENTS)
WITH_SUITES = [a for a in ASSIGNMENTS if (ROOT / "autograder" / a).is_dir()]


def _wrong_catalogue():
    return [pytest.param(assignment, case, id=f"{assignment}-{case['name']}")
            for assignment in ASSIGNMENTS for case in wrong_catalogue(assignment)]


def _cells_by_id(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id")}


# Where a task's checks must use another task's code, and why (none but this one).
DEPENDS_ON = {("07_experiments", "loss_scaler"): {
    "experiment_precision": "the precision experiment trains with the student's own LossScaler while the notebook "
                            "runs: a stubbed scaler stops the experiment (and there is no request to lend one in)"}}


def _stub_cases():
    """(assignment, task): the solution notebook with only that task's code cell put back to the
    release's stub. Every autograded task whose code lives in a `<task>_code` cell."""
    cases = []
    for assignment in ASSIGNMENTS:
        release = _cells_by_id(nbformat.read(str(release_notebook(assignment)), as_version=4))
        for task in graded_tasks(release_notebook(assignment)):
            if f"{task}_code" in release:
                cases.append(pytest.param(assignment, task, id=f"{assignment}-{task}"))
    return cases


def test_every_assignment_has_a_suite_and_three_wrong_submissions():
    assert WITH_SUITES == ASSIGNMENTS
    counts = {a: sum(1 for p in _wrong_catalogue() if p.values[0] == a) for a in ASSIGNMENTS}
    assert all(n >= 3 for n in counts.values()), counts


def test_every_library_task_can_be_left_as_a_stub():
    covered = {p.values[1] for p in _stub_cases()}
    missing = [t for a in ASSIGNMENTS for t in tasks.LIBRARY_TASKS[a] if t not in covered]
    assert not missing, f"library tasks without a `<task>_code` cell to stub: {missing}"


@pytest.mark.parametrize("assignment", WITH_SUITES)
def test_solution_scores_full_marks(assignment):
    result = graded(assignment)
    assert result["fatal"] is None and result["cell_errors"] == []
    missing = {t: s for t, s in scores(result).items() if s[0] != s[1]}
    assert not missing, {t: feedback_text(t, result["tasks"][t]) for t in missing}


@pytest.mark.parametrize("assignment", WITH_SUITES)
def test_blank_release_scores_zero(assignment):
    result = graded(assignment, "blank")
    assert set(scores(result)) == set(graded_tasks(release_notebook(assignment)))
    assert all(score == 0 for score, _ in scores(result).values()), scores(result)


@pytest.mark.parametrize("assignment,case", _wrong_catalogue())
def test_wrong_submission_loses_exactly_the_tasks_it_breaks(assignment, case):
    result = graded(assignment, case["name"])
    lost = sorted(t for t, (score, points) in scores(result).items() if score < points)
    assert lost == sorted(case["breaks"]), (case["description"], {t: feedback_text(t, result["tasks"][t]) for t in lost})
    for task, deserved in case.get("scores", {}).items():  # where the catalogue says how much a mistake costs
        assert scores(result)[task][0] == pytest.approx(deserved, abs=1e-3), (case["name"], task, scores(result)[task])


@pytest.mark.parametrize("assignment,task", _stub_cases())
def test_a_stubbed_task_costs_that_task_only(assignment, task, tmp_path):
    """One task left as the release hands it out: it scores 0, every other task full marks."""
    nb = source(assignment)
    stub = _cells_by_id(nbformat.read(str(release_notebook(assignment)), as_version=4))[f"{task}_code"]
    _cells_by_id(nb)[f"{task}_code"].source = stub.source
    result = grade(assignment, nb, tmp_path)
    got = scores(result)
    assert got[task][0] == 0, feedback_text(task, result["tasks"][task])
    allowed = DEPENDS_ON.get((assignment, task), {})
    others = {t: feedback_text(t, result["tasks"][t]) for t, (s, p) in got.items()
              if t != task and t not in allowed and s < p}
    assert not others, others


def test_feedback_names_checks_but_never_shows_hidden_test_code(tmp_path):
    result = grade("01_forward_ops", inject(source("01_forward_ops"), (
        "from course_lib.student import implements\nfrom course_lib import ops\n"
        "@implements(ops.Log, 'compute')\ndef compute(self, a):\n    return a")), tmp_path)
    text = "".join(feedback_text(t, g) for t, g in result["tasks"].items())
    assert "\N{BALLOT X}" in text and "Log" in text
    hidden = [line.strip() for p in (ROOT / "autograder").rglob("*.py") for line in p.read_text().splitlines()
              if len(line.strip()) > 25 and not line.strip().startswith(('"""', "#"))]
    leaked = [line for line in hidden if line in text]
    assert not leaked, leaked[:3]


def test_feedback_groups_a_parametrised_check_and_shows_its_first_failure_in_full():
    checks = [{"task": "t", "weight": 1, "check": "input gradient on unseen strides", "test": "test_a",
               "case": f"stride {i}", "passed": i != 2, "message": "" if i != 2 else "wrong values " + "x" * 300}
              for i in range(1, 6)]
    text = feedback_text("t", {"points": 5, "score": 4, "checks": checks})
    lines = text.splitlines()
    assert lines[1] == "  \N{BALLOT X} input gradient on unseen strides: 4 of 5 passed; first failure (stride 2):"
    assert "x" * 90 in text and text.count("x") == 300, "the message is wrapped, not cut"
    assert max(len(line) for line in lines) <= 100 and sum("\N{BALLOT X}" in line for line in lines) == 1
