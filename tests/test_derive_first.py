"""Derive first (source/README.md convention 7, issue 36 section 2): no committed release shows a
task's own code before that task's check, outside a collapsed ``<details>`` hint.

The rule (which expressions of a solution count, what counts as reading) is
course_tools/derive_first.py's docstring. This file reads the committed releases only (no kernel,
no build): a few seconds.

Two lists hold what the rule finds today and lets through, each entry with its reason. Both are
asserted still found, so an entry that a change of the notebook made stale fails here until it is
removed (a fixed leak cannot stay on the list and hide a new one).
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib import tasks
from course_tools import build as course_build
from course_tools.derive_first import distinctive_expressions, hits, read_release, task_expressions

ROOT = Path(__file__).resolve().parents[1]
BUILT = course_build.available_assignments()
OLD_CELLS = json.loads((ROOT / "tests" / "fixtures" / "derive_first" / "old_release_cells.json").read_text())["cases"]

# Real leaks still open: (assignment, task, reading cell's grade_id, expression as squeezed).
# Each is the class of defect the rule is for; fix the notebook, then delete the line.
KNOWN_OPEN = [
]

# Found by the rule, read, and not a recipe for the task: (assignment, task, cell, expression, why).
ACCEPTED = [
    ("07_experiments", "experiment_precision", "gradient_histogram", "-(-len(Y_TRAIN)//BATCH)",
     "the histogram demo's batches per epoch (ceiling division); the task states its updates as "
     "epochs * len(loader), and this is plumbing, not the experiment's recipe"),
    ("07_experiments", "experiment_precision", "gradient_histogram", "-len(Y_TRAIN)//BATCH",
     "part of the line above"),
]


def _key(assignment, hit):
    return (assignment, hit.task, hit.cell, hit.expression)


@pytest.fixture(scope="module")
def expressions():
    """{assignment: {task: expressions}}, computed once for the file."""
    return {a: task_expressions(a) for a in BUILT}


@pytest.fixture(scope="module")
def found(expressions):
    return {a: hits(read_release(a), expressions[a]) for a in BUILT}


@pytest.mark.parametrize("assignment", BUILT)
def test_no_task_shows_its_code_before_its_check(assignment, found):
    allowed = {e[:4] for e in KNOWN_OPEN + ACCEPTED if e[0] == assignment}
    new = [str(h) for h in found[assignment] if _key(assignment, h) not in allowed]
    assert not new, (f"{assignment}: a task's own code in what the student reads before the task's check "
                     f"(move it after the check, or into a <details> hint; source/README.md convention 7):\n"
                     + "\n".join(new))
    stale = allowed - {_key(assignment, h) for h in found[assignment]}
    assert not stale, f"{assignment}: no longer found, remove from KNOWN_OPEN/ACCEPTED in this file: {sorted(stale)}"


# Code tasks in which the rule finds nothing to look for, each for its reason. Everything else has
# something: a rule so strict that a task has nothing left to find would pass every release.
NOTHING_TO_FIND = {
    # one operator on the arguments, under 7 characters: `a / b` is what any text writes for division
    ("01_forward_ops", "forward_divide"), ("01_forward_ops", "forward_matmul"),
    ("01_forward_ops", "forward_negate"), ("01_forward_ops", "forward_power"),
    # numeric answers (values typed in): numbers are the hidden suites' business, not text search's
    ("02_backward_ops", "broadcast_adjoint"), ("02_backward_ops", "summation_adjoint"),
    ("02_backward_ops", "matmul_adjoint"), ("02_backward_ops", "reverse_by_hand"),
    ("04_conv_backward", "conv_worked_example"), ("05_pooling_backward", "pooling_worked_example"),
}


def test_every_other_code_task_has_expressions_to_look_for(expressions):
    empty = {(a, t) for a in BUILT for t, found in expressions[a].items() if not found}
    assert empty == {e for e in NOTHING_TO_FIND if e[0] in BUILT}, (
        f"tasks with nothing to find, not in NOTHING_TO_FIND: {sorted(empty - NOTHING_TO_FIND)}; "
        f"listed but with something to find now: {sorted(NOTHING_TO_FIND - empty)}")


# ---------------------------------------------------------------------------------- the rule itself
@pytest.mark.parametrize("code, counted, not_counted", [
    ("return a.log()", {"a.log()"}, set()),
    ("return a.maximum(0)", {"a.maximum(0)"}, set()),
    ("return a ** self.scalar", {"a**self.scalar"}, set()),
    # plumbing and names: builtins on plain arguments, plain lookups, comparisons naming a case
    ("n = len(shape)\nfor i in range(ndim):\n    x = node.inputs[0]\nif axes is None:\n    pass",
     set(), {"len(shape)", "range(ndim)", "node.inputs[0]", "axesisNone"}),
    # a tool picked up (not returned) is named, the work done with it counts
    ("mask = _first_max_mask(a, k, s, p)\nreturn _col2im(mask * spread, a.shape, k, s, p)",
     {"_col2im(mask*spread,a.shape,k,s,p)"}, {"mask=_first_max_mask(a,k,s,p)", "_first_max_mask(a,k,s,p)"}),
    # worked-out arguments make a call more than a tool's name
    ("a = a.pad(((0, 0), (p, p), (p, p), (0, 0)))", {"a.pad(((0,0),(p,p),(p,p),(0,0)))"}, set()),
    # one operation inside a line names a quantity; two are a formula
    ("gap = max(gap, abs(lhs - rhs) / scale)", {"abs(lhs-rhs)", "abs(lhs-rhs)/scale"}, {"lhs-rhs"}),
])
def test_distinctive_expressions(code, counted, not_counted):
    found = distinctive_expressions(code)
    assert counted <= found, (code, found)
    assert not (not_counted & found), (code, found)


def _task_notebook(*cells, task="forward_relu"):
    """A release-like notebook: the cells given, where the string "CHECK" stands for the task's graded cell."""
    out = []
    for cell in cells:
        if cell == "CHECK":
            cell = new_code_cell("check(relu)", metadata={"nbgrader": {"grade": True, "grade_id": task, "points": 1}})
        out.append(cell)
    return new_notebook(cells=out)


LEAK = "Use `a.maximum( 0 )` for this."
HINT = f"Try it first.\n\n<details><summary>Hint 2</summary>\n\n{LEAK}\n\n</details>\n\nThen check."


@pytest.mark.parametrize("cells, leaks", [
    ([new_markdown_cell(LEAK), "CHECK"], True),                        # in plain view, spacing aside
    ([new_code_cell("out = a.maximum(0)  # the demo"), "CHECK"], True),  # in a visible code cell
    ([new_code_cell('def relu(a):\n    """a.maximum(0)"""\n    raise NotImplementedError()'), "CHECK"], True),
    ([new_markdown_cell(HINT), "CHECK"], False),                       # inside a collapsed hint
    ([new_markdown_cell("<DETAILS open><summary>x</summary>a.maximum(0)</details>"), "CHECK"], False),
    ([new_markdown_cell("No hint here."), "CHECK", new_markdown_cell(LEAK)], False),  # the worked answer, after
    ([new_markdown_cell("Use `np.maximum(a, 0)` in NumPy."), "CHECK"], False),  # another expression
])
def test_a_leak_is_found_only_before_the_check_and_outside_details(cells, leaks):
    found = hits(_task_notebook(*cells), {"forward_relu": {"a.maximum(0)"}})
    assert bool(found) == leaks, found
    if leaks:
        assert "task forward_relu: cell #0" in str(found[0]) and "`a.maximum(0)`" in str(found[0])


def test_a_task_without_its_check_is_an_error():
    with pytest.raises(KeyError, match="forward_relu"):
        hits(new_notebook(cells=[new_markdown_cell(LEAK)]), {"forward_relu": {"a.maximum(0)"}})


@pytest.mark.parametrize("case", OLD_CELLS, ids=[f"{c['assignment']}@{c['commit'][:7]}#{c['cell_index']}"
                                                  for c in OLD_CELLS])
def test_earlier_releases_fail(case, expressions):
    """Cells of earlier releases (verbatim from git) that gave tasks' code away: today's rule, with
    today's solutions, finds every expression the reader found there by hand."""
    assignment = case["assignment"]
    current = expressions[assignment]
    make = new_markdown_cell if case["cell_type"] == "markdown" else new_code_cell
    for task, expression in case["expected"].items():
        assert expression in current[task], (
            f"{assignment} {task}: today's solution no longer has {expression!r} (has {sorted(current[task])}): "
            f"update this fixture case")
        notebook = _task_notebook(make(case["source"]), "CHECK", task=task)
        found = {h.expression for h in hits(notebook, {task: current[task]})}
        assert expression in found, (assignment, task, case["commit"], found)


def test_the_lists_name_real_tasks_and_cells():
    for assignment, task, cell, expression, *_ in KNOWN_OPEN + ACCEPTED:
        assert task in tasks.LIBRARY_TASKS[assignment] + tasks.NOTEBOOK_TASKS[assignment], task
        release = nbformat.read(str(course_build.release_notebook(assignment)), as_version=4)
        assert any(c.metadata.get("nbgrader", {}).get("grade_id") == cell for c in release.cells), cell
    assert all(len(e) == 5 and e[4] for e in ACCEPTED), "every accepted hit says why"
