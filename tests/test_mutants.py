"""Mutation testing of the hidden suites (course_tools/mutation): the operators, the committed list
of equivalent mutants, and a fixed sample of mutants graded through the real route.

The full run (every mutant of every task, hours on two cores) is a benchmark: `course mutants`,
figures in benchmarks/README.md. Here one mutant of each task of every assignment, chosen by id
(the same sample on every machine), is graded in one notebook per assignment (``together``),
sandbox included, and each must cost its task points or be listed as equivalent.
"""
import ast

import pytest

from course_lib import tasks
from course_tools.grading.results import ResultStore
from course_tools.mutation.mutants import mutants_of, notebook_with, sample
from course_tools.mutation.operators import mutations
from course_tools.mutation.run import equivalent_ids, grade_mutants
from grading_support import require_sandbox

REGION = '''n = a.shape[0]
out = (x - y.max(axis=1, keepdims=True)) / n
out[:, ::-1] += b[1:n]
if out.ndim != 2:
    raise ValueError(f"bad {n} of {out.ndim}")
return out.compact().astype(np.float64), np.sum(out, axes=(0, 2)), f(a, b)'''


def _bare(text: str) -> str:
    """``text`` without the parentheses the mutator puts around a spliced expression."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and i < len(text) - 1:
            return text  # the first parenthesis closes before the end: not one pair around it all
    return text[1:-1] if "," not in text[1:-1] or "(" in text[1:] else text


def _changes(code=REGION):
    return {(m.kind, " ".join(m.before.split()), _bare(m.after)) for m in mutations(code)}


def test_every_operator_family_changes_the_region():
    found = _changes()
    expected = {
        ("arithmetic", "(x - y.max(axis=1, keepdims=True)) / n", "(x - y.max(axis=1, keepdims=True)) * n"),
        ("arithmetic", "x - y.max(axis=1, keepdims=True)", "y.max(axis=1, keepdims=True) - x"),
        ("arithmetic", "out[:, ::-1] += b[1:n]", "out[:, ::-1] -= b[1:n]"),
        ("comparison", "out.ndim != 2", "out.ndim == 2"),
        ("unary", "-1", "1"),
        ("constant", "0", "1"), ("constant", "0", "-1"), ("constant", "True", "False"),
        ("slice", "::-1", ":"), ("slice", "1:n", ":n"), ("slice", "1:n", "1:"),
        ("axis", "y.max(axis=1, keepdims=True)", "y.max(keepdims=True)"), ("axis", "(0, 2)", "(2, 0)"),
        ("arguments", "f(a, b)", "f(b, a)"),
        ("statement", "n = a.shape[0]", "pass"), ("statement", "out.compact()", "out"),
        ("reduction", "y.max", "y.min"), ("reduction", "np.sum", "np.mean"),
        ("dtype", "np.float64", "np.float32"), ("dtype", "out.compact().astype(np.float64)", "out.compact()"),
    }
    assert expected <= found, sorted(expected - found)


def test_mutants_parse_differ_and_leave_messages_alone():
    found = mutations(REGION)
    assert len({m.code for m in found}) == len(found)
    for mutant in found:
        ast.parse(mutant.code)
        assert mutant.code != REGION
        assert 'f"bad {n} of {out.ndim}"' in mutant.code or mutant.after == "pass", mutant


def test_a_mutant_changes_only_its_region_of_the_notebook():
    mutant = mutants_of("01_forward_ops", {"forward_negate"})[0]
    nb = notebook_with("01_forward_ops", [mutant])
    plain = notebook_with("01_forward_ops", [])
    changed = [(a.source, b.source) for a, b in zip(plain.cells, nb.cells) if a.source != b.source]
    assert len(changed) == 1
    before, after = changed[0]
    assert mutant.original in before and mutant.mutation.code in after
    assert before.replace(mutant.original, mutant.mutation.code) == after


def test_every_listed_equivalent_mutant_is_a_mutant_of_todays_reference():
    listed = equivalent_ids()
    assert listed, "autograder/equivalent_mutants.toml lists nothing"
    current = {m.id for a in tasks.ASSIGNMENTS for m in mutants_of(a)}
    stale = sorted(set(listed) - current)
    assert not stale, f"listed as equivalent but no longer mutants (the reference changed: judge again): {stale}"


@pytest.mark.parametrize("assignment", list(tasks.ASSIGNMENTS))
def test_the_hidden_suite_kills_its_sample_of_mutants(assignment, tmp_path):
    require_sandbox()
    chosen = sample(mutants_of(assignment), per_task=1)
    assert {m.task for m in chosen} == {m.task for m in mutants_of(assignment)}
    # No confirmation of kills: a kill another task's mutant caused would only weaken this test.
    outcomes = grade_mutants(chosen, workers=2, together=True, store=ResultStore(tmp_path), confirm=False)
    equivalent = equivalent_ids()
    escaped = {m.id: (m.summary, outcomes[m.id]) for m in chosen
               if outcomes[m.id].verdict == "error" or (outcomes[m.id].verdict == "survived" and m.id not in equivalent)}
    assert not escaped, escaped


# The equivalence battery (course_tools/mutation/equivalence.py) on a fixed sample: the first listed
# entry of each task that has a battery, and two mutants that are not equivalent, which it must refute
# (a battery that never tells two versions apart would pass every entry). The whole list is
# `course mutants --check-equivalent` (about 15 minutes on two cores).
NOT_EQUIVALENT = {
    "backward_broadcast_to-53f288ae51": "shape=(3, 0)",  # sums only the axes whose out_grad size is not 0
    "adjoint_check-bb7d63b062": "NaN",  # the ValueError for non-finite results dropped
}


def test_the_equivalence_battery_passes_a_sample_of_the_list_and_refutes_real_survivors():
    from course_tools.mutation.batteries import battery_for
    from course_tools.mutation.equivalence import check_entries, check_mutant, prepared

    listed = equivalent_ids()
    first = {}
    for entry in sorted(listed):
        task = entry.rsplit("-", 1)[0]
        if battery_for(task) is not None:
            first.setdefault(task, entry)
    verdicts = check_entries(sorted(first.values()), examples=8)
    assert len(verdicts) >= 15
    wrong = [(v.id, v.status, v.why, v.case[:200]) for v in verdicts if v.status != "equivalent"]
    assert not wrong, wrong
    for entry, shown_by in NOT_EQUIVALENT.items():
        task = entry.rsplit("-", 1)[0]
        mutant = next(m for m in mutants_of(tasks.assignment_of(task), {task}) if m.id == entry)
        battery = battery_for(task)
        verdict = check_mutant(mutant, battery, prepared(mutant.assignment, battery), 20)
        assert verdict.status == "refuted" and shown_by in verdict.case, (entry, verdict)
