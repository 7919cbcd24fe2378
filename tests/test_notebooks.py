"""The notebook sequence: source metadata, the builds, and nbgrader's own pipeline.

The expensive part (building every release and executing every solution notebook) runs once
per session, in the ``fresh_build`` fixture; the tests below share it.
"""
import json
import re
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import DeadKernelError
from nbgrader.nbgraderformat import MetadataValidator

from conftest import ASSIGNMENT_DATA, code_units, given_lines, leaks, significant_lines
from grading_support import wrong_catalogue
from course_lib import tasks
from course_lib.checks import RUN_ALL_NOTE
from course_tools import build as course_build
from course_tools.cited_numbers import uncomputed_citations
from course_tools.demonstrations import is_demonstration
from course_tools.regions import library_regions, notebook_region_bodies

ROOT = Path(__file__).resolve().parents[1]
BUILT = course_build.available_assignments()
SOLUTION_BUDGET_S = {"07_experiments": 150}
DEFAULT_BUDGET_S = 75
TOTAL_BUDGET_S = 420


def _source(assignment):
    return nbformat.read(str(course_build.source_notebook(assignment)), as_version=4)


def _introduction(nb) -> str:
    """The notebook's first markdown cell: its introduction (expected time, points, links)."""
    return next(c.source for c in nb.cells if c.cell_type == "markdown")


def _nbgrader(cell):
    return cell.metadata.get("nbgrader", {})


def test_every_assignment_has_a_source_notebook():
    assert BUILT == list(tasks.ASSIGNMENTS)


@pytest.mark.parametrize("assignment", BUILT)
def test_source_notebook_metadata_is_valid_and_ids_match_the_tasks(assignment):
    nb = _source(assignment)
    MetadataValidator().validate_nb(nb)  # nbgrader's own check; raises on bad metadata
    ids = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade_id")]
    assert len(ids) == len(set(ids)), f"duplicate grade ids in {assignment}: {ids}"
    graded = [_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade")]
    expected = tasks.LIBRARY_TASKS[assignment] + tasks.NOTEBOOK_TASKS[assignment]
    assert sorted(graded) == sorted(expected)
    solution_ids = {_nbgrader(c)["grade_id"] for c in nb.cells
                    if _nbgrader(c).get("solution") and c.cell_type == "code"}
    for task in tasks.LIBRARY_TASKS[assignment]:
        assert f"{task}_code" in solution_ids, f"{assignment}: no solution cell {task}_code"
    assert all(_nbgrader(c).get("points", 1) > 0 for c in nb.cells if _nbgrader(c).get("grade"))
    assert nb.metadata.kernelspec.name == "python3"
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), "source has outputs"


_HOURS = {"an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_FRACTIONS = {"": 0, " and a quarter": 0.25, " and a half": 0.5, " and three-quarter": 0.75}
_EXPECTED_TIME = re.compile(r"\*\*Expected time\.\*\*[^(]*?\babout (an|one|two|three|four|five|six)"
                            r"((?: and a quarter| and a half| and three-quarter)?) hours?"
                            r"((?: and a quarter| and a half)?)[^(]*\((\d+) points;", re.IGNORECASE)


def _stated_points(nb):
    """task -> N for every "(`task`, N points)" in the notebook's markdown (N may be 2.5)."""
    stated = {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for task, n in re.findall(r"\(`(\w+)`, (\d+(?:\.\d+)?) points?\b", cell.source):
                stated[task] = float(n)
    return stated


@pytest.mark.parametrize("assignment", BUILT)
def test_every_instruction_and_given_cell_is_locked(assignment):
    """Instructions, figures and demos are locked in every notebook (autograding puts back the
    original of a locked cell): a cell is the student's to write only when it is a solution cell
    (code, or a written answer)."""
    nb = _source(assignment)
    loose = [f"{cell.cell_type} cell {cell.get('id')} ({_nbgrader(cell).get('grade_id', 'no nbgrader metadata')})"
             for cell in nb.cells if not _nbgrader(cell).get("solution") and not _nbgrader(cell).get("locked")]
    assert not loose, f"{assignment}: cells that are neither locked nor a solution: {loose}"


@pytest.mark.parametrize("assignment", BUILT)
def test_points_follow_the_expected_time_and_the_prose_states_them_right(assignment):
    """Points follow effort: the introduction states the expected time and the total, the total is
    the metadata's, every "(`task`, N points)" matches its cell, and the rate is about 12 an hour."""
    nb = _source(assignment)
    points = {_nbgrader(c)["grade_id"]: _nbgrader(c)["points"] for c in nb.cells if _nbgrader(c).get("grade")}
    intro = _introduction(nb)
    found = _EXPECTED_TIME.search(intro)
    assert found, f"{assignment}: the introduction states no 'Expected time ... about N hours (T points; ...'"
    hours = _HOURS[found.group(1).lower()] + _FRACTIONS[found.group(2).lower() or found.group(3).lower()]
    assert int(found.group(4)) == sum(points.values()), (assignment, found.group(0), sum(points.values()))
    assert 10 <= sum(points.values()) / hours <= 14, f"{assignment}: {sum(points.values())} points for {hours} h"
    wrong = {t: (n, points.get(t)) for t, n in _stated_points(nb).items() if points.get(t) != n}
    assert not wrong, f"{assignment}: the prose states other points than the metadata: {wrong}"


@pytest.mark.parametrize("assignment", BUILT)
def test_solution_cells_hold_exactly_the_library_code(assignment):
    nb = _source(assignment)
    cells = {_nbgrader(c).get("grade_id"): c for c in nb.cells}
    regions = library_regions()
    for task in tasks.LIBRARY_TASKS[assignment]:
        in_notebook = notebook_region_bodies(cells[f"{task}_code"].source, f"{assignment}:{task}_code")
        in_library = [r.body for r in regions[task]]
        assert in_notebook == in_library, f"{task}: the notebook's solution differs from course_lib's region"


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.fixture(scope="session")
def fresh_build(tmp_path_factory):
    """Every release and solution built into a temporary folder, and the CPU seconds each solution's
    kernel used. CPU time, not wall time: `make test` runs two test files at once on two cores, and
    the budget is about the work a solution asks of a student's machine, not about this one's load.
    The kernel is this process's child, reaped when it shuts down, so RUSAGE_CHILDREN counts it."""
    out = tmp_path_factory.mktemp("fresh")
    cpu_seconds, wall_seconds = {}, {}
    for assignment in BUILT:
        before = _children_cpu_seconds()
        wall_seconds.update(course_build.build([assignment], out / "assignments", out / "solutions"))
        cpu_seconds[assignment] = _children_cpu_seconds() - before
    (out / "solution_seconds.json").write_text(json.dumps({"cpu": cpu_seconds, "wall": wall_seconds}))
    return out, cpu_seconds


def test_committed_releases_and_solutions_are_fresh(fresh_build):
    out, _ = fresh_build
    stale = course_build.compare_builds(BUILT, out / "assignments", out / "solutions")
    assert stale == [], "out of date; run `make course`: " + ", ".join(stale)


def test_model_answers_of_the_solutions_built_here_cite_only_their_own_run(fresh_build):
    """tests/test_model_answers.py reads the committed solutions; these were built just now, on
    this machine under this run's load (two test files at once), so their timings and memory
    differ from the committed ones. A model answer that typed a number in fails here."""
    out, _ = fresh_build
    problems = {notebook.parent.name: uncomputed_citations(nbformat.read(str(notebook), as_version=4))
                for notebook in sorted((out / "solutions").glob("*/*.ipynb"))}
    assert problems and not any(problems.values()), {k: list(map(str, v)) for k, v in problems.items() if v}


def test_solutions_execute_within_budget(fresh_build):
    _, timings = fresh_build  # CPU seconds of each solution's kernel
    for assignment, seconds in timings.items():
        assert seconds < SOLUTION_BUDGET_S.get(assignment, DEFAULT_BUDGET_S), (assignment, seconds)
    assert sum(timings.values()) < TOTAL_BUDGET_S, timings


_RUN_TIME = re.compile(r"runs in (\w+) to (\w+) minutes")


def test_stated_run_times_are_the_budget_the_build_enforces():
    """A run time in the prose is not a measurement typed in: the upper end a notebook states (and
    docs/hub.md repeats for the heaviest one) must cover the CPU budget that
    test_solutions_execute_within_budget enforces on every build, and a notebook with a budget of
    its own must state one."""
    stated = {}
    for assignment in BUILT:
        intro = _introduction(_source(assignment))
        found = _RUN_TIME.search(intro)
        budget = SOLUTION_BUDGET_S.get(assignment, DEFAULT_BUDGET_S)
        if assignment in SOLUTION_BUDGET_S:
            assert found, f"{assignment}: its solution has a budget of {budget} s; the introduction states no 'runs in N to M minutes'"
        if found:
            stated[assignment] = found.group(0)
            assert budget <= 60 * _HOURS[found.group(2).lower()], (assignment, found.group(0), budget)
    heaviest = max(BUILT, key=lambda a: SOLUTION_BUDGET_S.get(a, DEFAULT_BUDGET_S))
    hub = (ROOT / "docs" / "hub.md").read_text(encoding="utf-8")
    on_hub = re.search(rf"heaviest notebook \({heaviest[:2]}\) {_RUN_TIME.pattern}", hub)
    assert on_hub, f"docs/hub.md does not name {heaviest} as the heaviest notebook with its run time"
    assert on_hub.group(0).endswith(stated[heaviest]), (on_hub.group(0), stated[heaviest])


@pytest.mark.parametrize("assignment", BUILT)
def test_release_executes_and_every_graded_cell_fails(fresh_build, assignment):
    out, _ = fresh_build
    folder = out / "assignments" / assignment
    probe = folder / "executed_probe.ipynb"
    nb = nbformat.read(str(folder / f"{assignment}.ipynb"), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import course_lib; print(course_lib.__file__)"))
    nbformat.write(nb, str(probe))
    try:
        nb = course_build.execute_notebook(probe, folder, allow_errors=True, timeout=300)
    except DeadKernelError as err:
        pytest.fail(f"the release of {assignment} crashed the kernel: {err}")
    finally:
        probe.unlink()
    # the kernel ran the student-facing course_lib shipped beside the notebook, not the reference
    assert nb.cells[-1].outputs[0].text.strip() == str(folder / "course_lib" / "__init__.py")
    for index, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if meta.get("grade") and cell.cell_type == "code":
            assert errors, f"{assignment}: graded cell {meta['grade_id']} passes on the blank release"
            # the setup cell's import of course_lib.checks makes the error say where Run All stopped
            assert errors[0].traceback[-1].endswith(RUN_ALL_NOTE), (assignment, meta["grade_id"])
        elif cell.cell_type == "code" and not meta.get("solution"):
            # Restart & Run All stops only at the student's own cells and the checks: a given cell (a
            # demo, a figure, a report) that uses a task's stub reports it (checks.demonstration)
            assert not errors, (f"{assignment}: the given cell {meta.get('grade_id') or index} stops Run All on the "
                                f"blank release: {errors[0].ename}: {errors[0].evalue}" if errors else "")


def test_leak_detector_flags_copied_code_but_not_one_shared_line():
    region = significant_lines("offset += sl.start * stride\nstrides.append(stride * sl.step)\n")
    assert leaks([region], "x = 1\n    offset += sl.start * stride\n    strides.append(stride * sl.step)\n")
    assert not leaks([region], "x = 1\n    offset += sl.start * stride\n")


def test_a_hidden_file_leaks_by_two_lines_of_one_function_not_by_two_lines_far_apart():
    hidden = ("from course_lib import tasks\n\n"
              "def check_shape(found, expected_shape):\n    if found is None:\n        return 'missing'\n"
              "    assert found.shape == expected_shape, found.shape\n")
    units = code_units(hidden)
    assert len(units) == 1   # the import is not a secret
    assert leaks(units, "    if found is None:\n    assert found.shape == expected_shape, found.shape\n")
    assert not leaks(units, "from course_lib import tasks\n    if found is None:\n")


def test_no_solution_or_hidden_test_leaks_into_releases(fresh_build):
    out, _ = fresh_build
    order = list(tasks.ASSIGNMENTS)
    given = given_lines()
    regions = library_regions()
    # The hidden suites never reach a student. An assignment's misconceptions (and 06's planted
    # bugs) are wrong versions of its solutions: secret like them until that assignment is done.
    hidden = [unit for p in (ROOT / "autograder").rglob("*.py") if p.name not in ASSIGNMENT_DATA
              for unit in code_units(p.read_text(), given)]
    for assignment in BUILT:
        later = [t for a in order[order.index(assignment):] for t in tasks.LIBRARY_TASKS[a]]
        secrets = [significant_lines(r.body) - given for t in later for r in regions[t]]
        secrets += [unit for a in order[order.index(assignment):]
                    for p in (ROOT / "autograder" / a).glob("*.py") if p.name in ASSIGNMENT_DATA
                    for unit in code_units(p.read_text(), given)]
        for other in BUILT:  # every notebook's answers to the tasks of this and later assignments
            if order.index(other) >= order.index(assignment):
                for cell in _source(other).cells:
                    if _nbgrader(cell).get("solution"):  # code answers, and model answers with mark schemes
                        secrets += [significant_lines(b) - given for b in notebook_region_bodies(cell.source)]
        for folder in (out / "assignments" / assignment, ROOT / "assignments" / assignment):
            for path in folder.rglob("*"):
                if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".txt"):
                    text = path.read_text()
                    if path.suffix == ".ipynb":
                        text = "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells)
                    found = leaks(secrets + hidden, text)
                    assert not found, f"{path} leaks: {found[:2]}"


def test_nbgrader_autograde_gives_the_solutions_full_marks(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", course_build.tool_env()["PATH"])  # the gradebook runs `alembic`
    course = tmp_path / "course"
    course.mkdir()
    for assignment in BUILT:
        shutil.copytree(ROOT / "source" / assignment, course / "source" / assignment)
        submission = course / "submitted" / "alice" / assignment
        submission.mkdir(parents=True)
        shutil.copy(course_build.source_notebook(assignment), submission)
    db = f"sqlite:///{course}/gradebook.db"
    common = [f"--CourseDirectory.root={course}", f"--CourseDirectory.db_url={db}"]
    for assignment in BUILT:
        for step in (["generate_assignment", assignment, "--force"], ["autograde", assignment, "--create"]):
            result = subprocess.run([sys.executable, "-m", "nbgrader", *step, *common], cwd=course,
                                    env=course_build.tool_env(), capture_output=True, text=True)
            assert result.returncode == 0, result.stderr[-3000:]
    with Gradebook(db) as gradebook:
        for assignment in BUILT:
            for notebook in gradebook.find_submission(assignment, "alice").notebooks:
                for grade in notebook.grades:
                    if grade.auto_score is not None and not grade.needs_manual_grade:
                        assert grade.score == grade.max_score, (assignment, grade.name, grade.score)


# A visible check fails only because of its own task: where the checked code calls another task of
# the same notebook, the check lends reference values (naive loops, precomputed recipes) in its
# place. Each case: the tasks left as their release stubs, and the checks that must still pass.
INDEPENDENT_CHECKS = [
    ("01_forward_ops", ["normalize_axes"], ["forward_summation", "transpose_permutation", "forward_transpose",
                                            "forward_broadcast_to", "forward_matmul"]),
    ("01_forward_ops", ["transpose_permutation"], ["forward_transpose", "forward_matmul"]),
    ("02_backward_ops", ["backward_broadcast_to"], ["backward_matmul"]),
    ("02_backward_ops", ["topo_sort", "backward_summation", "backward_divide_scalar", "backward_negate"],
     ["reverse_mode", "softmax_loss"]),
    ("03_ndarray", ["ndarray_compact_strides", "ndarray_permute", "ndarray_broadcast_to", "ndarray_getitem"],
     ["ndarray_flip", "ndarray_pad", "op_flip", "op_dilate", "op_undilate", "adjoint_check"]),
    ("03_ndarray", ["op_undilate"], ["op_dilate"]),
    ("03_ndarray", ["op_dilate"], ["op_undilate"]),
    ("04_conv_backward", ["conv_naive_backward", "conv_im2col_forward"], ["conv_backward"]),
    ("04_conv_backward", ["conv_naive_backward", "conv_im2col_forward", "conv_backward"], ["nn_conv"]),
    # the fixed find-the-bugs listing runs NumPy and the given naive forward only
    ("04_conv_backward", ["conv_naive_backward", "conv_im2col_forward", "conv_backward", "nn_conv"],
     ["conv_fixed_backward"]),
    ("05_pooling_backward", ["maxpool_forward", "maxpool_mask", "pool_col2im", "avgpool_forward"],
     ["maxpool_backward", "avgpool_backward"]),
    ("06_gradient_checking", ["gradient_check"], ["planted_bug_checks"]),
]


def _visible_checks(assignment, nb, tmp_path, **env) -> dict[str, list]:
    """{grade id: its error outputs} for each visible check of ``nb`` run in a copy of the release folder."""
    folder = tmp_path / assignment
    shutil.copytree(course_build.release_notebook(assignment).parent, folder)
    probe = folder / "probe.ipynb"
    nbformat.write(nb, str(probe))
    nb = course_build.execute_notebook(probe, folder, allow_errors=True, timeout=300, extra_env=env)
    return {_nbgrader(c)["grade_id"]: [o for o in c.outputs if o.output_type == "error"]
            for c in nb.cells if _nbgrader(c).get("grade") and c.cell_type == "code"}


@pytest.mark.parametrize("assignment,stubbed,passing", INDEPENDENT_CHECKS,
                         ids=[f"{a}-{'+'.join(s)}" for a, s, _ in INDEPENDENT_CHECKS])
def test_a_visible_check_fails_only_because_of_its_own_task(assignment, stubbed, passing, tmp_path):
    release = nbformat.read(str(course_build.release_notebook(assignment)), as_version=4)
    stubs = {_nbgrader(c).get("grade_id"): c.source for c in release.cells}
    nb = _source(assignment)
    # demonstration cells (figures, demos) compute nothing a later cell reads (the build checks
    # that), so they are left out: the checks' outcome is the same, in less time
    nb.cells = [cell for cell in nb.cells if not is_demonstration(cell)]
    for cell in nb.cells:
        if _nbgrader(cell).get("grade_id") in {f"{t}_code" for t in stubbed}:
            cell.source = stubs[_nbgrader(cell)["grade_id"]]
    outcome = _visible_checks(assignment, nb, tmp_path)
    for task in stubbed:
        assert outcome[task], f"{assignment}: the check of the stubbed task {task} passes"
    for task in passing:
        errors = outcome[task]
        assert not errors, (f"{assignment}: the check of {task} fails when {', '.join(stubbed)} are stubs: "
                            f"{errors[0].ename}: {errors[0].evalue}" if errors else "")


# 07's experiments run the student's LossScaler (the precision experiment is the scaler at work), so a
# stub of it cannot be lent around; a WRONG scaler must still leave the experiment's check passing: it
# replays the recorded scales through the student's own scaler and holds back the parts that need a
# right one, as the hidden suite charges a scaler bug to loss_scaler alone.
# Scaler mistakes of 07's wrong-submission catalogue, read from it by name: the experiment's check
# must replay through whatever scaler the student wrote, and wait for a right overflow flag before it
# judges the mixed rows' accuracy (finite-of-the-last-parameter lets inf steps through).
SCALER_MISTAKES = ("scaler-never-grows", "no-min-scale-floor", "finite-of-the-last-parameter")


@pytest.mark.parametrize("mistake", SCALER_MISTAKES)
def test_the_precision_experiments_check_survives_a_wrong_scaler(mistake, tmp_path):
    case = next(c for c in wrong_catalogue("07_experiments") if c["name"] == mistake)
    assert set(case["edits"]) == {"loss_scaler_code"}, f"{mistake} no longer edits only the scaler"
    nb = _source("07_experiments")
    nb.cells = [cell for cell in nb.cells if not is_demonstration(cell)
                and _nbgrader(cell).get("grade_id") not in {"experiment_implementations_code", "experiment_pooling_code",
                                                            "experiment_implementations", "experiment_pooling",
                                                            "implementations_report", "pooling_report"}]
    scaler = next(c for c in nb.cells if _nbgrader(c).get("grade_id") == "loss_scaler_code")
    for old, new in case["edits"]["loss_scaler_code"]:
        assert scaler.source.count(old) == 1, f"the solution's scaler changed: {old!r} is no longer in it once"
        scaler.source = scaler.source.replace(old, new)
    outcome = _visible_checks("07_experiments", nb, tmp_path, NBGRADER_EXECUTION="autograde")
    assert outcome["loss_scaler"], f"the scaler that {mistake} passes its own check"
    errors = outcome["experiment_precision"]
    assert not errors, f"a scaler that {mistake} fails the precision experiment's check: {errors[0].evalue if errors else ''}"


# A wrong answer, not only a stub, must leave Run All going (the blank release test runs every demo
# with the stubs). Each notebook runs once with wrong answers of the catalogue for the tasks its demos
# use, several at once. 02: a wrong reduce_to_shape raises ValueError in the end-to-end table and the
# training demo, power_scalar and exp reach the second-order and raw-array demos. 03: column-major
# strides reach every NDArray demo, flip, pad and undilate the adjoint demo and the digit figure, and
# adjoint_check the adjoint demo and the recipe figure. 04: im2col reaches the timing demo, the
# backward the staged checks, the PyTorch comparison and the training, nn.Conv the training and the
# kernel figure, and the worked example its self-check. 05 and 06: one wrong answer for every task.
RUN_ALL_WRONG_ANSWERS = [
    ("02_backward_ops", ("reduce_ignores_prepended_axes", "power_scalar_uses_output", "exp_gradient_outside_the_graph")),
    ("03_ndarray", ("compact_strides_column_major", "flip_ignores_existing_offset", "pad_ignores_before",
                    "undilate_gradient_not_cropped", "adjoint_check_lets_nan_through")),
    ("04_conv_backward", ("im2col_ignores_dilation", "backward_kernel_not_flipped", "nn_conv_valid_padding",
                          "worked_example_counts_windows")),
    ("05_pooling_backward", ("maxpool_pads_with_zeros", "maxpool_mask_pads_with_zeros", "maxpool_backward_without_compact",
                             "col2im_assigns_instead_of_adding", "avgpool_sums_instead_of_averaging",
                             "avgpool_backward_divides_by_k", "worked_example_avg_not_divided")),
    ("06_gradient_checking", ("divides-by-h", "float32-sweep-in-float64", "check-finite-nan-only")),
]
# 07 passed the same run with one wrong answer per task (cost model, memory, seeds, both experiments,
# scaler, precision recipe; 2026-12-07) but costs a minute of CI; its experiment checks lend what
# they need (test_the_precision_experiments_check_survives_a_wrong_scaler and the catalogue).


@pytest.mark.parametrize("assignment,mistakes", RUN_ALL_WRONG_ANSWERS, ids=[a for a, _ in RUN_ALL_WRONG_ANSWERS])
def test_a_wrong_answer_stops_no_given_cell(assignment, mistakes, tmp_path):
    mistake = " + ".join(mistakes)
    nb = _source(assignment)
    for case in [next(c for c in wrong_catalogue(assignment) if c["name"] == name) for name in mistakes]:
        for cell in nb.cells:
            for old, new in case["edits"].get(_nbgrader(cell).get("grade_id"), []):
                assert cell.source.count(old) == 1, f"{case['name']}: {old!r} is no longer in the solution once"
                cell.source = cell.source.replace(old, new)
    folder = tmp_path / assignment
    shutil.copytree(course_build.release_notebook(assignment).parent, folder)
    probe = folder / "probe.ipynb"
    nbformat.write(nb, str(probe))
    nb = course_build.execute_notebook(probe, folder, allow_errors=True, timeout=300)
    stopped = {_nbgrader(c).get("grade_id") or i: f"{e.ename}: {e.evalue}" for i, c in enumerate(nb.cells)
               if c.cell_type == "code" and not _nbgrader(c).get("grade") and not _nbgrader(c).get("solution")
               for e in c.outputs if e.output_type == "error"}
    assert not stopped, f"{assignment} with {mistake}: given cells stop Run All: {stopped}"
    failed = {_nbgrader(c)["grade_id"] for c in nb.cells if _nbgrader(c).get("grade") and c.cell_type == "code"
              and any(o.output_type == "error" for o in c.outputs)}
    assert failed, f"{mistake}: no visible check of {assignment} fails"


@pytest.mark.parametrize("assignment", BUILT)
def test_the_introduction_links_the_student_pages_that_the_build_puts_beside_it(assignment):
    """The glossary and the debugging guide: linked from the introduction, and copied beside the
    notebook in its release and its solution, so that the links work offline."""
    intro = _introduction(_source(assignment))
    for page in course_build.STUDENT_PAGES:
        assert f"]({page.name})" in intro, f"{assignment}: the introduction does not link {page.name}"
        for folder in (course_build.RELEASE, course_build.SOLUTIONS):
            copy = folder / assignment / page.name
            assert copy.exists() and copy.read_text(encoding="utf-8") == course_build.student_page_text(page), \
                f"{copy} is missing or stale: run `make course`"
    glossary = course_build.GLOSSARY.read_text(encoding="utf-8")
    for overloaded in ("**adjoint**", "`dilation=`", "cross-correlation", "rotate by 180°", "中文", "русский"):
        assert overloaded in glossary, f"docs/glossary.md does not explain {overloaded}"
