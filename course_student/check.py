"""`course check`: run a notebook's visible checks in a fresh kernel and say which pass.

    python -m course_student.check assignments/01_forward_ops/01_forward_ops.ipynb

A *visible check* is an nbgrader cell with ``grade: true, solution: false``; its ``grade_id`` is
the task id (``forward_matmul``) and the code the student writes for it sits in the solution cell
``<task>_code`` above it. The notebook runs top to bottom, cell by cell, in a new ``python3``
kernel started in the notebook's folder, so a release's student-facing ``course_lib`` next to it
is the one imported. The student's file is read, never written: outputs stay in memory.

Unlike ``nbgrader validate`` (which exits 0 whatever it finds), the command exits 1 when a check
fails and 2 when the notebook cannot be checked at all.

When a check fails, the same kernel is then probed for a known mistake behind it and the report
says what the code looks like ("this looks like a known mistake: the kernel is not flipped"): with
the full course bundle only, see diagnose.py. The results, and the report printed from them:
check_report.py.

Errors do not stop the run: every cell runs, and a failing cell is recorded. A cell that runs
longer than ``timeout`` seconds is interrupted, recorded as timed out, and the run goes on in the
same kernel. Only when the kernel dies, or does not come back from the interrupt, does the run
stop; the checks after that point are reported as "not run".
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from course_lib import tasks

from .check_report import FAILED, NOT_RUN, PASSED, CheckReport, TaskResult, format_report
from .diagnose import diagnose
from .env import QUIET_KERNEL, kernel_environment
from .words import plural

RECOVER_S = 30  # how long a kernel may take to answer again after a timed-out cell is interrupted
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FRAME = re.compile(r"(?:^|\n)\s*(?:Cell In\[\d*\], line \d+|File [^\n]*?:\d+), in (\w+)")


class CheckError(Exception):
    """The notebook cannot be checked: a missing path, not a notebook, or no visible checks."""


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _is_check(cell) -> bool:
    meta = _nbgrader(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def _is_written_answer(cell) -> bool:
    meta = _nbgrader(cell)
    return cell.cell_type == "markdown" and bool(meta.get("grade")) and bool(meta.get("solution"))


def _task_of(cell) -> str | None:
    """The task a check or solution cell belongs to (its grade_id, less a ``_code`` suffix)."""
    meta = _nbgrader(cell)
    if not (meta.get("grade") or meta.get("solution")):
        return None
    grade_id = meta.get("grade_id", "")
    return grade_id.removesuffix("_code") or None


def _read_notebook(path: Path):
    """The notebook at ``path``; CheckError with a suggestion when it is not one."""
    if not path.exists():
        hint = ""
        if str(path).strip("/") in tasks.ASSIGNMENTS:
            name = str(path).strip("/")
            hint = f"; to check assignment {name}, give its notebook: assignments/{name}/{name}.ipynb"
        raise CheckError(f"{path} does not exist{hint}")
    if path.is_dir():
        found = sorted(p.name for p in path.glob("*.ipynb"))
        hint = f"; did you mean {path / found[0]}?" if len(found) == 1 else ""
        raise CheckError(f"{path} is a folder, not a notebook{hint}")
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as err:  # nbformat raises several kinds (bad JSON, bad encoding, not a notebook)
        raise CheckError(f"{path} is not a readable Jupyter notebook ({type(err).__name__}: {err})") from err


def _one_line(ename: str, evalue: str) -> str:
    """'AssertionError: first line of the message' (the rest of a long message is left out)."""
    lines = [line.strip() for line in str(evalue).splitlines() if line.strip()]
    if not lines:
        return ename
    return f"{ename}: {lines[0]}" + (" ..." if len(lines) > 1 else "")


def _error_of(cell) -> str | None:
    """One line for the error a just-executed cell raised, or None. A NotImplementedError is the
    stub a student has not replaced yet: say so, and name the function that raised it."""
    for output in cell.get("outputs", []):
        if output.get("output_type") != "error":
            continue
        ename, evalue = output.get("ename", "Error"), output.get("evalue", "")
        if ename != "NotImplementedError":
            return _one_line(ename, evalue)
        if "not implemented" in evalue.lower():
            return _one_line(ename, evalue)
        frames = _FRAME.findall(_ANSI.sub("", "\n".join(output.get("traceback", []))))
        where = f" in {frames[-1]}" if frames and frames[-1] != "<module>" else ""
        return f"not implemented yet (NotImplementedError{where})"
    return None


def _recovered(client) -> bool:
    """After a timed-out cell: interrupt the kernel, and True when it answers a trivial cell again.

    The kernel keeps its state, but gets a new client: nbclient abandons the timed-out cell's read
    of the output channel midway, and later cells' outputs would then arrive late or not at all.
    """
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from nbclient.util import ensure_async, run_sync

    async def reconnect():
        await ensure_async(client.km.interrupt_kernel())
        await ensure_async(client.kc.stop_channels())
        client.kc = client.km.client()
        client.kc.allow_stdin = False
        await ensure_async(client.kc.start_channels())
        await ensure_async(client.kc.wait_for_ready(timeout=RECOVER_S))

    timeout, client.timeout = client.timeout, RECOVER_S
    try:
        run_sync(reconnect)()
        client.execute_cell(nbformat.v4.new_code_cell("pass"), -1)
        return True
    except (CellTimeoutError, DeadKernelError, RuntimeError):  # RuntimeError: no reply to wait_for_ready
        return False
    finally:
        client.timeout = timeout


PROBE_TIMEOUT_S = 60  # the probes of every failed task together; past that, no diagnosis


def _execute(client, code: str) -> str | None:
    """Run ``code`` in the kernel as a cell of its own, for at most PROBE_TIMEOUT_S seconds; its
    error line, or None. (A timeout raises: diagnose.py then gives no diagnosis.)"""
    cell = nbformat.v4.new_code_cell(code)
    timeout, client.timeout = client.timeout, min(client.timeout, PROBE_TIMEOUT_S)
    try:
        client.execute_cell(cell, -1)
    finally:
        client.timeout = timeout
    return _error_of(cell)


def _run_cells(nb, folder: Path, timeout: int, progress: bool, name: str,
               assignment: str | None = None) -> tuple[dict[int, str | None], str, dict[str, dict]]:
    """Execute the code cells of ``nb`` in order in a new kernel in ``folder``; then, in the same
    kernel, look for a known mistake behind each failed check of ``assignment`` (diagnose.py).

    Returns ({cell index: its error line or None} for the cells that ran, why the run stopped
    early or "" when every cell ran, {task: diagnosis} for the failed checks recognised).
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    errors: dict[int, str | None] = {}
    stopped = ""
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                            record_timing=False, resources={"metadata": {"path": str(folder)}},
                            extra_arguments=QUIET_KERNEL)
    with kernel_environment(MPLBACKEND="agg"), client.setup_kernel(cwd=str(folder)), \
            tqdm(total=len(nb.cells), desc=name, unit="cell", disable=not progress) as bar:
        for index, cell in enumerate(nb.cells):
            task = _task_of(cell)
            if task:
                bar.set_postfix_str(task)
            if cell.cell_type == "code" and cell.source.strip():
                try:
                    client.execute_cell(cell, index)
                    errors[index] = _error_of(cell)
                except CellTimeoutError:
                    errors[index] = f"timed out: still running after {timeout} s (an endless loop?)"
                    if not _recovered(client):
                        stopped = f"the kernel did not recover after cell {index + 1} timed out"
                except DeadKernelError:
                    errors[index] = "the kernel died (out of memory, or the code exited Python)"
                    stopped = f"the kernel died in cell {index + 1}"
            bar.update(1)
            if stopped:
                break
        diagnoses = {}
        failed = [_nbgrader(nb.cells[i]).get("grade_id") for i, err in errors.items() if err and _is_check(nb.cells[i])]
        if assignment and failed and not stopped:
            bar.set_postfix_str("looking for known mistakes")
            diagnoses = diagnose(assignment, failed, lambda code: _execute(client, code))
    return errors, stopped, diagnoses


def check_notebook(path: Path, timeout: int = 300, progress: bool = True) -> CheckReport:
    """Run the notebook at ``path`` in a fresh kernel in its folder and report its visible checks.

    timeout: seconds one cell may run. progress: show a progress bar over the cells.
    Raises CheckError when ``path`` is missing, not a notebook, or has no visible checks.
    """
    path = Path(path)
    nb = _read_notebook(path)
    checks = [i for i, cell in enumerate(nb.cells) if _is_check(cell)]
    if not checks:
        raise CheckError(f"{path} has no visible checks (nbgrader cells with grade: true, solution: false)")
    written = [f"{_nbgrader(c).get('grade_id')} ({plural(_nbgrader(c).get('points', 0), 'point')})"
               for c in nb.cells if _is_written_answer(c)]

    assignment, notes = assignment_of(nb, path)
    start = time.perf_counter()
    errors, stopped, diagnoses = _run_cells(nb, path.resolve().parent, timeout, progress, path.name, assignment)
    seconds = time.perf_counter() - start

    def label(index):
        grade_id = _nbgrader(nb.cells[index]).get("grade_id")
        return f"cell {index + 1}" + (f" ({grade_id})" if grade_id else "")

    cell_errors = [f"{label(i)}: {err}" for i, err in errors.items() if err and i not in checks]
    code_errors = {_task_of(nb.cells[i]): f"{label(i)}: {err}" for i, err in errors.items()
                   if err and _nbgrader(nb.cells[i]).get("solution")}
    results = []
    for i in checks:
        meta = _nbgrader(nb.cells[i])
        task, points = meta.get("grade_id", f"cell {i + 1}"), float(meta.get("points") or 0)
        if i not in errors:
            results.append(TaskResult(task, points, NOT_RUN, stopped))
        else:
            status, message = _outcome(errors[i], code_errors.get(task))
            results.append(TaskResult(task, points, status, message, diagnoses.get(task) if status == FAILED else None))
    return CheckReport(path, results, cell_errors, seconds, written, notes)


def assignment_of(nb, path: Path) -> tuple[str, list[str]]:
    """The assignment a notebook belongs to, from its own metadata (``course.assignment``, which
    the build writes), else from its file name; and a note when the two disagree (a renamed copy,
    "04_conv_backward-Copy1.ipynb", is still checked and diagnosed as 04_conv_backward)."""
    recorded = nb.metadata.get("course", {}).get("assignment")
    if not recorded:
        return path.stem, []
    if recorded == path.stem:
        return recorded, []
    return recorded, [f"{path.name} is a notebook of assignment {recorded} (its metadata says so; the file "
                      f"name does not): checked as {recorded}"]


def _outcome(error: str | None, code_error: str | None) -> tuple[str, str]:
    """(status, message) of a check that ran, from its own error and that of its task's code cell
    ("cell 13 (best_step_size_code): NameError: ..."); None where a cell raised nothing."""
    where, _, why = (code_error or "").partition(": ")
    if error is None:
        # A check can pass without the student's code: when the code cell fails, course_lib's own stays.
        return PASSED, f"passed, but {where} raised {why}" if code_error else ""
    if code_error is None:
        return FAILED, error
    if why.startswith("not implemented"):  # e.g. a top-level `raise NotImplementedError()` left in place
        return FAILED, f"not implemented yet: {where} raises NotImplementedError"
    return FAILED, f"{why} (raised first by {where})"  # the root cause, not the check's own symptom


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", type=Path, help="the notebook to check, e.g. assignments/<id>/<id>.ipynb")
    parser.add_argument("--timeout", type=int, default=300, help="seconds one cell may run (default 300)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        report = check_notebook(args.notebook, timeout=args.timeout, progress=not args.no_progress)
    except CheckError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(format_report(report))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
