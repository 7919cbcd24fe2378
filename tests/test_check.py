"""`course check` runs a notebook's visible checks in a real kernel and reports them per task.

Every notebook is checked in a copy under tmp_path, so the kernel (and anything it writes) never
touches the repository. Each check_notebook call starts one kernel: about 2-4 s on a 2-core machine.
"""
import os
import shutil
from pathlib import Path

import nbformat
import pytest

from course_lib import tasks
from course_student import check, check_report
from course_student.check import CheckError, check_notebook
from course_student.check_report import format_report
from course_tools.demo_class import MISTAKES, apply_edits

ROOT = Path(__file__).resolve().parents[1]
FORWARD = "01_forward_ops"
FORWARD_TASKS = tasks.LIBRARY_TASKS[FORWARD]


def _copy(folder: Path, dest: Path) -> Path:
    """Copy an assignment folder (notebook, and the student course_lib of a release) to ``dest``."""
    shutil.copytree(folder, dest, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    return dest / f"{folder.name}.ipynb"


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _status(report) -> dict[str, str]:
    return {t.task: t.status for t in report.tasks}


def test_the_solution_passes_every_check_and_the_file_is_left_alone(tmp_path):
    # The source notebook alone in its folder: the installed (reference) course_lib runs.
    solution_copy = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    before = solution_copy.read_bytes()
    report = check_notebook(solution_copy, progress=False)
    assert sorted(_status(report)) == sorted(FORWARD_TASKS)
    assert set(_status(report).values()) == {"passed"}, format_report(report)
    assert report.passed and report.cell_errors == []
    text = format_report(report)
    for task in FORWARD_TASKS:
        assert task in text
    assert "15 of 15 checks pass (15 / 15 points)" in text
    assert "hidden tests" in text
    assert solution_copy.read_bytes() == before, "check_notebook must not write the notebook"


def test_the_blank_release_fails_every_check_as_not_implemented(tmp_path):
    notebook = _copy(ROOT / "assignments" / FORWARD, tmp_path / FORWARD)
    report = check_notebook(notebook, progress=False)
    assert not report.passed
    assert set(_status(report).values()) == {"failed"}
    for result in report.tasks:
        assert result.message.startswith("not implemented yet"), result
    # The demo cells need the student's ops (transpose's demo the order of axes, the last one every
    # op): they report that inside their own output (course_lib.checks.demonstration) and let
    # Restart & Run All go on, so they are no cell errors.
    nb = nbformat.read(str(notebook), as_version=4)
    assert _cell(nb, "transpose_demo") and _cell(nb, "demo_graph")
    assert report.cell_errors == []
    text = format_report(report)
    assert "0 of 15 checks pass (0 / 15 points)" in text and "YOUR CODE HERE" in text
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):  # the kernel imported the release's own course_lib
        assert (tmp_path / FORWARD / "course_lib" / "__pycache__").is_dir()


def test_a_wrong_transpose_fails_exactly_the_transpose_check(tmp_path):
    notebook = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    # Reversing every axis (NumPy's .T) agrees with a swap of the last two only in 2-D.
    nb = apply_edits(nbformat.read(str(notebook), as_version=4), MISTAKES[FORWARD])
    nbformat.write(nb, str(notebook))

    report = check_notebook(notebook, progress=False)
    failed = {t.task for t in report.tasks if t.status != "passed"}
    # Only forward_transpose: no other cell of 01 calls Transpose.compute (forward_reshape makes its
    # non-compact input with NDArray.permute; MatMul transposes only in its gradient, unused here).
    assert failed == {"forward_transpose"}, format_report(report)
    message = next(t.message for t in report.tasks if t.task == "forward_transpose")
    assert message.startswith("AssertionError:") and "(2, 3, 4)" in message
    assert report.cell_errors == []
    assert "14 of 15 checks pass (14 / 15 points)" in format_report(report)


def test_a_crash_inside_a_check_names_the_case_it_was_checking(tmp_path):
    # The release (its student course_lib runs) with a normalize_axes that forgets NumPy integers:
    # the crash deep inside it says which of the check's cases was being checked.
    notebook = _copy(ROOT / "assignments" / FORWARD, tmp_path / FORWARD)
    nb = nbformat.read(str(notebook), as_version=4)
    _cell(nb, "normalize_axes_code").source = (
        '@implements(nd, "normalize_axes")\n'
        "def normalize_axes(axis, ndim):\n"
        "    if axis is None:\n"
        "        return tuple(range(ndim))\n"
        "    if isinstance(axis, int):\n"
        "        axis = (axis,)\n"
        "    return tuple(sorted(int(a) % ndim for a in axis))\n")
    nbformat.write(nb, str(notebook))

    report = check_notebook(notebook, progress=False)
    message = next(t.message for t in report.tasks if t.task == "normalize_axes")
    assert message == ("TypeError: 'numpy.int64' object is not iterable "
                       "(while checking the case axis=np.int64(1), ndim=2, expected=(1,))"), message


def test_a_hanging_cell_is_interrupted_and_the_check_goes_on(tmp_path):
    notebook = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    nb = nbformat.read(str(notebook), as_version=4)
    first_check = nb.cells.index(_cell(nb, "forward_negate"))
    nb.cells.insert(first_check, nbformat.v4.new_code_cell("while True:\n    pass"))
    log = _cell(nb, "forward_log_code")  # code that never returns: its check times out (no other cell uses log)
    assert "return a.log()" in log.source
    log.source = log.source.replace("return a.log()", "while True:\n        pass")
    nbformat.write(nb, str(notebook))

    report = check_notebook(notebook, timeout=6, progress=False)
    assert report.cell_errors == [f"cell {first_check + 1}: timed out: still running after 6 s (an endless loop?)"]
    log_result = next(t for t in report.tasks if t.task == "forward_log")
    assert log_result.status == "failed" and "timed out" in log_result.message
    assert {t.task for t in report.tasks if t.status == "passed"} == set(FORWARD_TASKS) - {"forward_log"}


def test_a_dead_kernel_leaves_the_later_checks_not_run(tmp_path):
    notebook = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    nb = nbformat.read(str(notebook), as_version=4)
    exp_check = nb.cells.index(_cell(nb, "forward_exp"))
    nb.cells.insert(exp_check, nbformat.v4.new_code_cell("import os\nos._exit(1)"))
    nbformat.write(nb, str(notebook))

    report = check_notebook(notebook, timeout=60, progress=False)
    status = _status(report)
    order = [t.task for t in report.tasks]
    assert all(status[t] == "passed" for t in order[: order.index("forward_exp")])
    assert all(status[t] == "not run" for t in order[order.index("forward_exp"):])
    assert any("kernel died" in e for e in report.cell_errors)
    assert "did not run" in format_report(report)


def test_a_missing_path_or_an_assignment_id_says_where_the_notebook_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckError, match="does not exist"):
        check_notebook(tmp_path / "nope.ipynb")
    with pytest.raises(CheckError, match=f"assignments/{FORWARD}/{FORWARD}.ipynb"):
        check_notebook(Path(FORWARD))


def test_a_file_that_is_not_a_notebook_or_has_no_checks_is_refused(tmp_path):
    not_json = tmp_path / "notes.ipynb"
    not_json.write_text("print('hello')\n")
    with pytest.raises(CheckError, match="not a readable Jupyter notebook"):
        check_notebook(not_json)
    plain = tmp_path / "plain.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")]), str(plain))
    with pytest.raises(CheckError, match="no visible checks"):
        check_notebook(plain)
    (tmp_path / "folder").mkdir()
    shutil.copy(plain, tmp_path / "folder" / "plain.ipynb")
    with pytest.raises(CheckError, match=r"is a folder.*did you mean .*plain\.ipynb"):
        check_notebook(tmp_path / "folder")


def test_a_kernel_that_ignores_the_interrupt_stops_the_run_cleanly(tmp_path, monkeypatch):
    monkeypatch.setattr(check, "RECOVER_S", 3)  # how long to wait for the kernel after the interrupt
    notebook = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    nb = nbformat.read(str(notebook), as_version=4)
    reshape_check = nb.cells.index(_cell(nb, "forward_reshape"))
    nb.cells.insert(reshape_check, nbformat.v4.new_code_cell(
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"))
    nbformat.write(nb, str(notebook))

    report = check_notebook(notebook, timeout=6, progress=False)
    order, status = [t.task for t in report.tasks], _status(report)
    assert all(status[t] == "passed" for t in order[: order.index("forward_reshape")])
    assert all(status[t] == "not run" for t in order[order.index("forward_reshape"):])
    assert report.cell_errors == [f"cell {reshape_check + 1}: timed out: still running after 6 s (an endless loop?)"]
    assert f"did not recover after cell {reshape_check + 1} timed out" in format_report(report)


def test_a_blank_code_cell_is_named_as_the_reason_its_check_fails(tmp_path):
    # 06's best_step_size_code raises NotImplementedError at the top level, so its check fails
    # on a missing variable; the report names the unimplemented cell instead.
    notebook = _copy(ROOT / "assignments" / "06_gradient_checking", tmp_path / "06_gradient_checking")
    report = check_notebook(notebook, progress=False)
    messages = {t.task: t.message for t in report.tasks}
    assert messages["best_step_size"].startswith("not implemented yet: cell ")
    assert "(best_step_size_code) raises NotImplementedError" in messages["best_step_size"]
    assert all(m.startswith("not implemented yet") for m in messages.values())
    assert "graded by hand (not checked here): taylor_argument (4 points)" in format_report(report)


def test_a_failing_code_cell_is_reported_even_when_its_check_passes(tmp_path):
    # Next to the source notebook the installed (reference) course_lib runs, so the divide check
    # passes on the library's code when the student's cell does not even compile: say so.
    notebook = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    nb = nbformat.read(str(notebook), as_version=4)
    divide = _cell(nb, "forward_divide_code")
    divide.source = divide.source.replace("return a / b", "return a / b +")
    nbformat.write(nb, str(notebook))

    report = check_notebook(notebook, progress=False)
    index = nb.cells.index(divide) + 1
    assert len(report.cell_errors) == 1
    assert report.cell_errors[0].startswith(f"cell {index} (forward_divide_code): SyntaxError: invalid syntax")
    result = next(t for t in report.tasks if t.task == "forward_divide")
    assert result.status == "passed"
    assert result.message.startswith(f"passed, but cell {index} (forward_divide_code) raised SyntaxError")


def test_a_renamed_copy_is_checked_and_diagnosed_as_its_assignment(tmp_path):
    """Jupyter's "Duplicate" makes 01_forward_ops-Copy1.ipynb: the assignment comes from the
    notebook's metadata, so its known mistake is still named, and the report says why."""
    notebook = _copy(ROOT / "source" / FORWARD, tmp_path / FORWARD)
    renamed = notebook.with_name(f"{FORWARD}-Copy1.ipynb")
    nbformat.write(apply_edits(nbformat.read(str(notebook), as_version=4), MISTAKES[FORWARD]), str(renamed))
    notebook.unlink()

    report = check_notebook(renamed, progress=False)
    transpose = next(t for t in report.tasks if t.task == "forward_transpose")
    assert transpose.diagnosis and transpose.diagnosis["name"] == "transpose_reverses_all_axes", transpose
    text = format_report(report)
    assert f"{FORWARD}-Copy1.ipynb is a notebook of assignment {FORWARD}" in text, text


def test_the_why_column_puts_the_verdict_first_and_wraps_instead_of_cutting():
    message = ("AssertionError: conv_backward: the gradient of x for a stride-2 conv with padding 1 and dilation 2: "
               "wrong shape: got (2, 6, 8, 2), expected (2, 6, 7, 2)")
    report = check_report.CheckReport(Path("04_conv_backward.ipynb"), [
        check_report.TaskResult("conv_backward", 14, "failed", message),
        check_report.TaskResult("conv_im2col_forward", 1, "passed")], [], 1.0)
    text = format_report(report)
    row = next(line for line in text.splitlines() if line.startswith("conv_backward "))
    assert row.split("failed", 1)[1].strip().startswith("wrong shape: got (2, 6, 8, 2), expected (2, 6, 7, 2)"), text
    assert "padding 1 and dilation 2" in text and "..." not in text, text  # wrapped, nothing cut
    assert all(len(line) <= check_report.WIDTH for line in text.splitlines()[:8]), text
    assert "1 of 2 checks pass (1 / 15 points)" in text, text
    one = check_report.CheckReport(Path("x.ipynb"), [check_report.TaskResult("t", 1, "failed", "no")], [], 1.0)
    assert "0 of 1 checks pass (0 / 1 point)" in format_report(one)
