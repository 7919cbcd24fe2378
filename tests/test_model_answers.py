"""Model answers cannot disagree with their own notebook: every number that an executed solution's
model answer (or the prose right after a measured table) cites is one the notebook computed
(course_tools/cited_numbers.py states the rounding tolerance and the allow-rule).

Cheap: it reads the committed solutions/*/*.ipynb, executes nothing. Rebuilding a solution on another
machine, or under load, changes its tables; a number typed into the source then fails here.
"""
from pathlib import Path

import nbformat
import pytest

from course_tools.cited_numbers import Number, matches, numbers, uncomputed_citations

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.parent.name for p in SOLUTIONS])
def test_every_number_a_model_answer_cites_is_one_the_notebook_computed(path):
    nb = nbformat.read(str(path), as_version=4)
    problems = uncomputed_citations(nb)
    assert not problems, (f"{path.relative_to(ROOT)} cites numbers its own run did not produce "
                          "(render them from the run, or phrase the answer without them):\n  "
                          + "\n  ".join(map(str, problems)))


def _markdown(text):
    return nbformat.v4.new_markdown_cell(text)


def _table_cell(markdown_table, stream=""):
    cell = nbformat.v4.new_code_cell("show_table(...)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": markdown_table})]
    if stream:
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=stream))
    return cell


def _answer(text):
    cell = _markdown(text)
    cell.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": "x", "points": 1,
                                 "locked": False, "schema_version": 3, "task": False}
    return cell


# The pooling table of 07's solution as built on 2026-12-03 and the sentence its model answer typed in.
_POOLING = ("| seed | max − avg (s) |\n| --- | --- |\n| 0 | -0.74 |\n| 4 | +0.15 |\n"
            "| mean [95% interval] (sd) | -0.55 [-1.44, +0.34] (sd 0.72) |")


@pytest.mark.parametrize("answer,backed", [
    ("max pooling was slower: +0.09 s per run [+0.04, +0.15].", False),   # the old 07 text
    ("max pooling was faster by 0.55 s, interval [-1.44, +0.34].", True),
    ("the mean difference was +0.55 s.", False),                          # the sign disagrees
    ("the mean difference was -0.6 s (sd 0.7).", True),                   # coarser rounding is fine
    ("the mean difference was -0.4 s.", False),                           # -0.55 does not round to it
    ("differences around $10^{-1}$, for 5 seeds in 2026.", True),         # magnitude, small int, year
    ("13,000x slower, at $2.2\\cdot10^{-16}$.", False),
])
def test_a_typed_in_number_fails_and_a_computed_one_passes(answer, backed):
    nb = nbformat.v4.new_notebook()
    nb.cells = [_table_cell(_POOLING), _markdown("Questions."), _answer(answer)]
    problems = uncomputed_citations(nb)
    assert (not problems) == backed, problems


def test_the_prose_after_a_table_is_checked_and_the_task_text_is_not():
    nb = nbformat.v4.new_notebook()
    nb.cells = [_markdown("Compare with 65504 and 2.3 S."), _table_cell(_POOLING),
                _markdown("The times differ by 0.42 s; 65504 and 2.3 are constants of the task.")]
    assert [p.text for p in uncomputed_citations(nb)] == ["0.42"]


def test_numbers_are_read_as_written():
    read = {n.text: n for n in numbers(r"float16 at $2^{16}$ is 88x; [−7.6, +10.1] 1.1e-16 max − avg")}
    assert set(read) == {"2^{16}", "88", "−7.6", "+10.1", "1.1e-16"}
    assert read["2^{16}"].value == 65536 and read["−7.6"].value == -7.6 and read["−7.6"].signed
    assert matches(Number(1.1e-16, 17, False, False, ""), Number(1.06e-16, 18, False, False, ""))
