"""nbgrader integration: ``nbgrader autograde`` grades with the hidden suites.

In nbgrader_config.py, HiddenSuiteGrader takes the place of nbgrader's Execute preprocessor:
instead of running the notebook in a kernel (where a student could monkeypatch the checks),
it grades the notebook with ``python -m course_tools.grading.suite`` in a separate process and
writes the outcome into each autograded cell's outputs, in the form nbgrader's SaveAutoGrades
reads: full marks (no error), partial credit (the score as the cell's result), or zero (an
error). The cell's text output is the feedback: each check, passed or failed and why; the
hidden tests' code never appears. Scores follow the task ids the gradebook knows: nbgrader's
own sanitizing (OverwriteCells, with add_missing_cells) has restored the graded cells by id.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer

from .results import ResultStore, grading_key
from .runner import grade_file
from .suite import feedback_text


class HiddenSuiteGrader(NbGraderPreprocessor):
    timeout = Integer(900, help="Seconds one notebook's grading may take in all").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        assignment, notebook = info.get("assignment"), info.get("notebook")
        course_root = Path(resources.get("metadata", {}).get("path", ".")).resolve()
        result = self._grade(nb, assignment, notebook, course_root)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if not (meta.get("grade") and not meta.get("solution") and cell.cell_type == "code"):
                continue
            graded = result["tasks"].get(meta.get("grade_id"))
            cell.outputs = self._outputs(meta.get("grade_id"), graded, result)
            cell.execution_count = None
        return nb, resources

    def _grade(self, nb, assignment, notebook, course_root) -> dict:
        course_root = self._course_root_of(course_root)
        store = ResultStore(course_root)
        key = grading_key(assignment, nb)
        stored = store.get(assignment, key)
        if stored is not None:  # graded ahead of time by `course grade` (same program, same suites)
            return stored
        with tempfile.TemporaryDirectory(prefix="course-grade-") as scratch:
            path = Path(scratch) / f"{notebook}.ipynb"
            nbformat.write(nb, str(path))
            result = grade_file(assignment, path, course_root, self.timeout)
        if result.get("tasks"):
            store.put(assignment, key, result)
        else:
            self.log.error("hidden-suite grading of %s/%s failed: %s", assignment, notebook, result.get("fatal"))
        return result

    @staticmethod
    def _course_root_of(path: Path) -> Path:
        # resources' path is the notebook's folder: <root>/submitted/<student>/<assignment>
        for parent in [path, *path.parents]:
            if (parent / "nbgrader_config.py").exists() or (parent / "gradebook.db").exists():
                return parent
        return path

    @staticmethod
    def _outputs(task_id: str, graded: dict | None, result: dict) -> list:
        if graded is None:
            message = result.get("fatal") or "no hidden checks for this cell"
            return [nbformat.v4.new_output("error", ename="NotGraded", evalue=message, traceback=[message])]
        text = feedback_text(task_id, graded)
        if result.get("cell_errors"):
            text += "Cells that raised while your notebook ran:\n" + "".join(
                f"  {e}\n" for e in result["cell_errors"][:10])
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        if graded["score"] <= 0:
            outputs.append(nbformat.v4.new_output("error", ename="HiddenChecksFailed",
                                                  evalue=f"0 / {graded['points']:g} points",
                                                  traceback=["No hidden check of this task passed."]))
        elif graded["score"] < graded["points"]:
            outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(graded["score"])},
                                                  execution_count=None))
        return outputs
