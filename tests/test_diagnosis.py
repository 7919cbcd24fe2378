"""Naming the mistake (course_tools/grading/diagnosis/diagnosis.py and autograder/<id>/misconceptions.py).

The rules of a diagnosis on made-up evidence; the misconception modules themselves (explanations,
notebook sections); and the real thing: every wrong submission of the catalogue and every solution
graded, each diagnosis compared with the one the catalogue claims. A diagnosis nobody claimed is
a false diagnosis and fails, as does a claimed one that is not made.

The gradings are shared with test_autograder (grading_support.graded): in a full run they cost
nothing here; run alone, this file grades the catalogue once (about 90 notebooks, 5-7 minutes on
two cores, most of it the experiments of 07). Last, `course check`'s probes: on answers made by
each misconception (no kernel), and end to end in a student's kernel on two catalogue cases.
"""
import re
import shutil

import nbformat
import numpy as np
import pytest

from course_lib import tasks
from course_student.check import check_notebook
from course_student.check_report import format_report
from course_tools.demo_class import apply_edits
from course_tools.grading.diagnosis import probes
from course_tools.grading.assignment_folder import assignment_module
from course_tools.grading.diagnosis.diagnosis import Call, Diagnoser, Misconception, check_catalogue, misconceptions_of
from course_tools.grading.suite.run import feedback_text
from grading_support import ROOT, grade, graded, require_sandbox, wrong_catalogue

ASSIGNMENTS = list(tasks.ASSIGNMENTS)
# Last case first: test_autograder grades the catalogue from the first case, on another worker, and
# graded() shares the gradings between them, so the two meet in the middle instead of waiting.
CATALOGUE = [pytest.param(a, case, id=f"{a}-{case['name']}") for a in reversed(ASSIGNMENTS)
             for case in reversed(wrong_catalogue(a))]

# Misconceptions no catalogue case exercises, and why that is enough.
NOT_IN_THE_CATALOGUE = {
    # One idea, one function (backward_ops.outside_the_graph) for the 13 op gradients of 02; the
    # catalogue exercises it on exp and divide.
    (task, "gradient_outside_the_graph") for task in tasks.LIBRARY_TASKS["02_backward_ops"]
    if task.startswith("backward_") and task not in ("backward_exp", "backward_divide")
}


@pytest.fixture
def sandbox():
    require_sandbox()


def diagnoses(result) -> dict:
    assert not result.get("grading_error"), result.get("grading_error")
    return {task: g["diagnosis"]["name"] for task, g in result["tasks"].items() if g.get("diagnosis")}


# ------------------------------------------------------------------------------ the rules
def _made_up(answers: dict) -> Misconception:
    """A misconception of the task "t" whose wrong answer to call args[0] is answers[args[0]]."""
    def compute(call):
        value = answers.get(call.args[0])
        if isinstance(value, Exception):
            raise value
        return value
    return Misconception("t", f"m{id(answers)}", "title", "explanation.", "where", compute)


def _diagnoser(*misconceptions) -> Diagnoser:
    d = Diagnoser("01_forward_ops")
    d.by_task = {"t": list(misconceptions)}
    return d


RIGHT, WRONG = np.zeros(3), np.ones(3)


def test_a_diagnosis_needs_two_inputs_that_agree():
    m = _made_up({"a": WRONG, "b": WRONG})
    d = _diagnoser(m)
    d.failed("t", Call("x", ("a",), {}), (), WRONG.copy(), RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is None, "one input is not enough"
    d.failed("t", Call("x", ("a",), {}), (), WRONG.copy(), RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is None, "the same input twice is still one input"
    d.failed("t", Call("x", ("b",), {}), (), WRONG.copy(), RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is m


def test_one_contradiction_vetoes_a_diagnosis():
    m = _made_up({"a": WRONG, "b": WRONG, "c": WRONG})
    d = _diagnoser(m)
    for name, got in (("a", WRONG), ("b", WRONG), ("c", 2 * WRONG)):
        d.failed("t", Call("x", (name,), {}), (), got, RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is None


def test_a_mistake_that_gives_the_right_answer_is_no_evidence():
    m = _made_up({"a": WRONG, "b": RIGHT, "c": WRONG})
    d = _diagnoser(m)
    d.failed("t", Call("x", ("a",), {}), (), WRONG, RIGHT, 1e-6, 1e-8)
    d.failed("t", Call("x", ("b",), {}), (), WRONG, RIGHT, 1e-6, 1e-8)  # right there: says nothing
    assert d.diagnosis("t") is None
    d.failed("t", Call("x", ("c",), {}), (), WRONG, RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is m


def test_two_misconceptions_that_both_fit_name_neither():
    first, second = _made_up({"a": WRONG, "b": WRONG}), _made_up({"a": WRONG, "b": WRONG})
    d = _diagnoser(first, second)
    for name in "ab":
        d.failed("t", Call("x", (name,), {}), (), WRONG, RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is None


def test_a_misconception_that_cannot_answer_is_no_evidence():
    m = _made_up({"a": ValueError("no such shape"), "b": WRONG, "c": WRONG})
    d = _diagnoser(m)
    for name in "abc":
        d.failed("t", Call("x", (name,), {}), (), WRONG, RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is m


def test_evidence_is_read_at_the_path_the_check_compared():
    m = _made_up({"a": {"grads": [RIGHT, WRONG]}, "b": {"grads": [RIGHT, WRONG]}})
    d = _diagnoser(m)
    d.failed("t", Call("x", ("a",), {}), ("grads", 1), WRONG, RIGHT, 1e-6, 1e-8)
    d.failed("t", Call("x", ("b",), {}), ("grads", 0), WRONG, RIGHT, 1e-6, 1e-8)  # the right part: no evidence
    assert d.diagnosis("t") is None
    d.failed("t", Call("x", ("b",), {}), ("grads", 1), WRONG, RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is m


def test_an_output_the_mistake_gets_wrong_but_the_student_got_right_vetoes_it():
    # The mistake makes both outputs wrong (dw and db divided by the batch); the student's dw is
    # wrong in the same way on two inputs, but their db passed: a near miss, not this mistake.
    m = _made_up({"a": {"grads": [WRONG, WRONG]}, "b": {"grads": [WRONG, WRONG]}})
    d = _diagnoser(m)
    for name in "ab":
        d.failed("t", Call("x", (name,), {}), ("grads", 0), WRONG, RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is m
    d.passed("t", Call("x", ("a",), {}), ("grads", 1), RIGHT, 1e-6, 1e-8)
    assert d.diagnosis("t") is None
    d.passed("t", Call("x", ("a",), {}), ("grads", 1), WRONG, 1e-6, 1e-8)  # where the mistake is right too
    d2 = _diagnoser(m)
    for name in "ab":
        d2.failed("t", Call("x", (name,), {}), ("grads", 0), WRONG, RIGHT, 1e-6, 1e-8)
    d2.passed("t", Call("x", ("b",), {}), ("grads", 1), WRONG, 1e-6, 1e-8)
    assert d2.diagnosis("t") is m, "a pass where the mistake gives the right value says nothing"


# ------------------------------------------------------------------------------ the misconceptions
def _headings(assignment: str) -> list[str]:
    nb = nbformat.read(str(ROOT / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
    lines = [line for cell in nb.cells if cell.cell_type == "markdown" for line in cell.source.splitlines()]
    return [re.sub(r"[`*$\\{}]", "", line.lstrip("#").strip()) for line in lines if line.startswith("#")]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_misconception_explains_itself_and_points_into_its_notebook(assignment):
    check_catalogue()
    found = misconceptions_of(assignment)
    assert found, f"{assignment} has no misconceptions"
    names = [(m.task, m.name) for m in found]
    assert len(names) == len(set(names)), "a misconception is named twice for one task"
    headings = _headings(assignment)
    for m in found:
        assert m.title and not m.title.endswith("."), m.title  # printed as "... a known mistake: <title>."
        assert len(m.explanation) > 80 and m.explanation.endswith("."), (m.name, m.explanation)
        assert assignment in m.where, (m.name, m.where)
        quoted = re.findall(r'"([^"]+)"', m.where)
        assert quoted, f"{m.name}: `where` should quote the notebook's section title"
        for title in quoted:
            assert any(title in heading for heading in headings), (m.name, title, headings)


def test_every_misconception_is_exercised_by_the_catalogue():
    claimed = {(task, name) for a in ASSIGNMENTS for case in wrong_catalogue(a)
               for task, name in case.get("diagnosis", {}).items()}
    written = {(m.task, m.name) for a in ASSIGNMENTS for m in misconceptions_of(a)}
    assert claimed <= written, f"the catalogue claims misconceptions nobody wrote: {sorted(claimed - written)}"
    assert written - claimed == NOT_IN_THE_CATALOGUE, sorted(written - claimed - NOT_IN_THE_CATALOGUE)


def test_a_mistake_written_another_way_claims_the_same_diagnosis():
    others = 0
    for a in ASSIGNMENTS:
        by_name = {case["name"]: case for case in wrong_catalogue(a)}
        for case in by_name.values():
            if "same_mistake_as" in case:
                others += 1
                # the same misconception (for divide and exp alike: "outside the graph" is one idea)
                assert set(case["diagnosis"].values()) == set(by_name[case["same_mistake_as"]]["diagnosis"].values())
                assert case["edits"] != by_name[case["same_mistake_as"]]["edits"], case["name"]
    assert others >= 10


# Misconceptions that predict more than one output wrong (two adjoints, several columns, a value
# and its re-evaluation): each needs a near miss in the catalogue, a mistake that gets one of
# those outputs as the misconception does and another one otherwise (issue 25).
SEVERAL_OUTPUTS = {
    "matmul_sums_leading_axes_only", "adjoints_overwritten", "softmax_loss_sums_over_batch",  # 02
    "naive_divides_by_batch",  # 04
    "scaler_grows_one_step_late", "good_steps_not_reset_after_growth",  # 07
}


def test_every_misconception_of_several_outputs_has_a_near_miss_that_claims_no_diagnosis():
    near = {}
    for a in ASSIGNMENTS:
        names = {m.name for m in misconceptions_of(a)}
        for case in wrong_catalogue(a):
            if "near_miss_of" in case:
                assert case["near_miss_of"] in names, (case["name"], case["near_miss_of"])
                assert case["near_miss_of"] not in case.get("diagnosis", {}).values(), case["name"]
                near.setdefault(case["near_miss_of"], []).append(case["name"])
    assert SEVERAL_OUTPUTS <= set(near), sorted(SEVERAL_OUTPUTS - set(near))


# ------------------------------------------------------------------------------ the catalogue, graded
@pytest.mark.parametrize("assignment,case", CATALOGUE)
def test_a_wrong_submission_gets_exactly_the_diagnosis_it_claims(sandbox, assignment, case):
    got = diagnoses(graded(assignment, case["name"]))
    assert got == case.get("diagnosis", {}), (case["description"], got)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_and_blank_releases_get_no_diagnosis(sandbox, assignment):
    assert diagnoses(graded(assignment)) == {}
    assert diagnoses(graded(assignment, "blank")) == {}


def test_the_feedback_says_looks_like_and_where_to_read(sandbox):
    result = graded("04_conv_backward", "backward_kernel_not_flipped")
    text = feedback_text("conv_backward", result["tasks"]["conv_backward"])
    assert "This looks like a known mistake: the kernel is not rotated by 180 degrees." in text
    assert "The backward pass, as convolutions" in text
    untouched = feedback_text("conv_im2col_forward", result["tasks"]["conv_im2col_forward"])
    assert "known mistake" not in untouched


# ------------------------------------------------------------------------------ course check
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_probes_of_course_check_recognise_every_misconception(assignment):
    """A student who answers every probe of a task as one misconception does is named that
    misconception, and only that one (no kernel: the answers are the misconception's own)."""
    for m in misconceptions_of(assignment):
        chosen = probes.probes_of(assignment, [m.task])
        values = []
        for probe in chosen:
            try:
                wrong = m.compute(probe.call)
            except Exception:  # noqa: BLE001 - this probe is outside what the mistake can answer
                wrong = None
            values.append(wrong if wrong is not None else probes._graded_form(probe.call.scenario,
                                                                              probes.reference(probe)))
        found = probes.diagnose_values(assignment, chosen, values)
        assert found.get(m.task) is m, (m.name, {t: d.name for t, d in found.items()})


def test_the_probes_find_nothing_in_right_answers():
    for assignment in ASSIGNMENTS:
        every = probes.probes_of(assignment, tasks.LIBRARY_TASKS[assignment] + tasks.NOTEBOOK_TASKS[assignment])
        right = [probes._graded_form(p.call.scenario, probes.reference(p)) for p in every]
        assert probes.diagnose_values(assignment, every, right) == {}


def test_a_task_whose_needed_task_failed_too_is_not_probed():
    """In a student's kernel the code a probe needs from another task is the student's own."""
    both = probes.probes_of("04_conv_backward", ["conv_backward", "conv_im2col_forward"])
    assert {p.task for p in both} == {"conv_im2col_forward"}
    assert {p.task for p in probes.probes_of("04_conv_backward", ["conv_backward"])} == {"conv_backward"}
    for assignment in ASSIGNMENTS:
        module = assignment_module(assignment, "misconceptions")
        known = set(tasks.LIBRARY_TASKS[assignment]) | set(tasks.NOTEBOOK_TASKS[assignment])
        for task, needed in getattr(module, "NEEDS", {}).items():
            assert {task, *needed} <= known, (assignment, task, needed)


def _check_case(tmp_path, assignment, case_name):
    folder = tmp_path / assignment
    shutil.copytree(ROOT / "source" / assignment, folder, ignore=shutil.ignore_patterns("__pycache__"))
    notebook = folder / f"{assignment}.ipynb"
    edits = next(c for c in wrong_catalogue(assignment) if c["name"] == case_name)["edits"]
    nbformat.write(apply_edits(nbformat.read(str(notebook), as_version=4), edits), str(notebook))
    return check_notebook(notebook, progress=False)


@pytest.mark.parametrize("assignment,case,task,name", [
    ("01_forward_ops", "transpose_default_reversed_seed_style", "forward_transpose", "transpose_reverses_all_axes"),
    ("05_pooling_backward", "maxpool_ties_to_every_maximum", "maxpool_mask", "ties_to_every_maximum"),
])
def test_course_check_names_the_mistake_in_the_students_kernel(tmp_path, assignment, case, task, name):
    report = _check_case(tmp_path, assignment, case)
    failed = {t.task: t for t in report.tasks if t.status == "failed"}
    assert task in failed, format_report(report)
    assert {t: r.diagnosis["name"] for t, r in failed.items() if r.diagnosis} == {task: name}
    assert "this looks like a known mistake" in format_report(report)


def test_course_check_without_the_misconceptions_says_nothing_more(tmp_path, monkeypatch):
    """The student install has no course_tools: the report is the visible checks' alone."""
    from course_student import diagnose

    monkeypatch.setattr(diagnose, "available", lambda: False)
    report = _check_case(tmp_path, "01_forward_ops", "transpose_reverses_all_axes")
    assert [t.task for t in report.tasks if t.status == "failed"] == ["forward_transpose"]
    assert all(t.diagnosis is None for t in report.tasks) and "known mistake" not in format_report(report)


def test_an_independently_written_solution_gets_no_diagnosis(sandbox, tmp_path):
    """Correct code written another way (other loops, names, arrays) is right, not a known mistake."""
    from test_similarity import independent

    result = grade("04_conv_backward", independent(), tmp_path)
    assert diagnoses(result) == {}
