"""`course similarity` on a simulated class of 04_conv_backward: a copied submission with renamed
variables, reordered helpers and new comments is found at the top; an independently written
correct solution is not flagged as a copy; blank releases are ignored."""
from __future__ import annotations

import copy
import re
import time

import nbformat

from course_tools.build import release_notebook
from course_tools.demo_class import filled_release
from course_tools.report import similarity
from fixtures.independent_solutions import CONV_04

ASSIGNMENT = "04_conv_backward"


def _cells(nb):
    return {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}


def _splice(cell_source: str, body: str) -> str:
    """The release cell with ``body`` written between its solution markers (at their indentation)."""
    lines = cell_source.splitlines()
    begin = next(i for i, l in enumerate(lines) if "### BEGIN SOLUTION" in l or "YOUR CODE HERE" in l)
    end = next((i for i, l in enumerate(lines) if "### END SOLUTION" in l or "raise NotImplementedError" in l), begin)
    indent = re.match(r"\s*", lines[begin]).group(0)
    return "\n".join(lines[:begin] + [indent + l if l else l for l in body.splitlines()] + lines[end + 1:])


def independent():
    nb = nbformat.read(str(release_notebook(ASSIGNMENT)), as_version=4)
    for grade_id, body in CONV_04.items():
        _cells(nb)[grade_id].source = _splice(_cells(nb)[grade_id].source, body)
    return nb


def copycat(original):
    """A copy dressed up: local names renamed, comments and docstrings changed, the top-level
    statements of a cell reordered, blank lines added."""
    nb = copy.deepcopy(original)
    renames = {"da_pad": "grad_padded", "dw": "kernel_grad", "db": "bias_grad", "columns": "cols_matrix",
               "windows": "win", "grad_a": "input_gradient", "grad_b": "weight_gradient", "b_rot": "rotated_kernel"}
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        text = cell.source
        for old, new in renames.items():
            text = re.sub(rf"\b{old}\b", new, text)
        text = re.sub(r"#[^\n]*", "# my own work", text)
        cell.source = text.replace("\n", "\n\n", 3)
    cells = _cells(nb)
    helpers = "def _unused_a(x):\n    return x + 1\n\n\ndef _unused_b(y):\n    return 2 * y\n"
    swapped = "def _unused_b(y):\n    return 2 * y\n\n\ndef _unused_a(x):\n    return x + 1\n"
    cells["conv_worked_example_code"].source += "\n" + swapped
    return nb, helpers


def test_a_disguised_copy_tops_the_ranking_and_independent_work_does_not():
    ada = filled_release(ASSIGNMENT)
    ada_cells = _cells(ada)
    cat, helpers = copycat(ada)
    ada_cells["conv_worked_example_code"].source += "\n" + helpers
    blank = nbformat.read(str(release_notebook(ASSIGNMENT)), as_version=4)
    release = nbformat.read(str(release_notebook(ASSIGNMENT)), as_version=4)
    submissions = {"ada": ada, "cat": cat, "ivan": independent(), "blank1": blank, "blank2": copy.deepcopy(blank)}
    codes, given = similarity.codes_of(submissions, release)
    pairs = similarity.compare(codes, given)
    assert (pairs[0].a, pairs[0].b) in (("ada", "cat"), ("cat", "ada")), [(p.a, p.b, p.similarity) for p in pairs]
    assert pairs[0].similarity > 0.9
    others = [p for p in pairs if {p.a, p.b} != {"ada", "cat"}]
    assert all(p.similarity < 0.5 for p in others), [(p.a, p.b, round(p.similarity, 2)) for p in others]
    assert not any("blank" in (p.a + p.b) for p in pairs), "blank releases are not compared"
    assert pairs[0].lines_a and pairs[0].lines_b


def test_the_independent_solution_is_correct(tmp_path):
    """The fixture is a real, correct solution (else 'independent work' would prove nothing)."""
    from grading_support import grade, require_sandbox, scores

    require_sandbox()
    result = grade(ASSIGNMENT, independent(), tmp_path)
    got = scores(result)
    assert all(s == p for t, (s, p) in got.items() if t in ("conv_naive_backward", "conv_im2col_forward",
                                                          "conv_backward", "nn_conv", "conv_worked_example")), got


def test_three_hundred_submissions_are_compared_in_seconds():
    ada = filled_release(ASSIGNMENT)
    release = nbformat.read(str(release_notebook(ASSIGNMENT)), as_version=4)
    class_ = {}
    for i in range(300):
        nb = copy.deepcopy(ada if i % 2 else independent())
        cell = _cells(nb)["conv_worked_example_code"]
        cell.source += f"\nextra_{i} = {i} * np.ones(({i % 7 + 1}, 3)) + {i % 5}\n"
        class_[f"s{i:03d}"] = nb
    start = time.perf_counter()
    codes, given = similarity.codes_of(class_, release)
    similarity.compare(codes, given)
    seconds = time.perf_counter() - start
    assert seconds < 120, seconds
