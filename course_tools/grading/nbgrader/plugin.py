"""nbgrader integration: ``nbgrader autograde`` grades with the hidden suites.

In nbgrader_config.py, HiddenSuiteGrader takes the place of nbgrader's Execute preprocessor:
instead of running the notebook in a kernel (where a student could monkeypatch the checks),
it grades the notebook with ``python -m course_tools.grading.suite`` in a separate process and
writes the outcome into each autograded cell's outputs, in the form nbgrader's SaveAutoGrades
reads: full marks (no error), partial credit (the score as the cell's result), or zero (an
error). The cell's text output is the feedback: each check, passed or failed and why; the
hidden tests' code never appears. Scores follow the task ids the gradebook knows: nbgrader's
own sanitizing (OverwriteCells, with add_missing_cells) has restored the graded cells by id.

A grading error (the grader, not the student, failed) raises: nbgrader then reports that
student's autograde as failed and removes what it wrote, and the submission this run created in
the gradebook is removed too, so no score is stored; the rest of the class is graded as usual.
"""
from __future__ import annotations

import tempfile
import textwrap
from pathlib import Path

import nbformat
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Enum, Integer

from course_student.words import plural

from ..results import ResultStore
from ...submission_times import collected_time
from ..route import graded_once
from ..launch.runner import grade_in_process
from ..settings import GradingSettings
from ...terminal import printable
from ..suite.run import FEEDBACK_WIDTH, feedback_text
from ..target import rewritten_note, version_note


class GradingFailed(RuntimeError):
    """The grader could not grade this notebook: nothing is stored; nbgrader reports the failure."""


class HiddenSuiteGrader(NbGraderPreprocessor):
    timeout = Integer(0, help="Seconds one notebook's grading may take in all (0: what the assignment's "
                              "time budgets allow)").tag(config=True)
    unsandboxed = Bool(False, help="Grade without bubblewrap (the worker then sees the machine's world-readable "
                                   "files; only resource limits and a cgroup contain it)").tag(config=True)
    grade_on = Enum(["own", "latest"], "own", help="Which release version a submission is graded against: "
                    "'own' (the one its locked cells match) or 'latest' (course grade --version latest)"
                    ).tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        assignment, notebook, student = info.get("assignment"), info.get("notebook"), info.get("student")
        result = self._grade(nb, assignment, notebook, student)
        if result.get("grading_error"):
            self._forget_new_submission(info.get("db_url"), assignment, student)
            # nbgrader prints this on the instructor's terminal
            raise GradingFailed(printable(f"grading error for {student}/{assignment}/{notebook}: "
                                          f"{result['grading_error']}"))
        first = True   # the version graded is said once, above the first graded cell's feedback
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if not (meta.get("grade") and not meta.get("solution") and cell.cell_type == "code"):
                continue
            graded = result["tasks"].get(meta.get("grade_id"))
            cell.outputs = self._outputs(meta.get("grade_id"), graded, result, float(meta.get("points", 0)), first)
            cell.execution_count = None
            first = False
        return nb, resources

    def _course_root(self) -> Path:
        # The course folder from nbgrader's own configuration, never from the submission's files
        # (a submitted folder may hold anything, a planted nbgrader_config.py included).
        return Path(CourseDirectory(config=self.config).root).resolve()

    def _submitted(self, assignment, notebook, student) -> Path | None:
        """The collected notebook itself: nbgrader hands this step a copy whose locked cells it has
        already replaced with the gradebook's (the latest release's), which would hide the release
        version the student worked on."""
        if not (assignment and notebook and student):
            return None
        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment)) / f"{notebook}.ipynb"
        return path if path.is_file() and not path.is_symlink() else None

    def _grade(self, nb, assignment, notebook, student) -> dict:
        store = ResultStore(self._course_root())
        # This configuration's own options win over the environment's (settings.py).
        settings = GradingSettings.current(unsandboxed=True if self.unsandboxed else None,
                                           notebook_seconds=self.timeout or None, course_root=self._course_root(),
                                           grade_on=self.grade_on)
        with tempfile.TemporaryDirectory(prefix="course-grade-") as scratch:
            path = self._submitted(assignment, notebook, student)
            if path is None:
                path = Path(scratch) / f"{notebook}.ipynb"
                nbformat.write(nb, str(path))
            else:  # this student's submission: the version they were given is part of the target (target.py)
                settings = settings.for_submission(student, collected_time(path.parent))
            # Usually stored already: graded ahead of time by `course grade` (same program, same suites).
            return graded_once(store, assignment, path, settings, grade_in_process, student or None)

    def _forget_new_submission(self, db_url, assignment, student) -> None:
        """Remove the gradebook's submission if nbgrader created it for this run (no grade in it
        yet): a grader failure must not show up as a score of 0. Earlier real grades stay."""
        if not (db_url and assignment and student):
            return
        from nbgrader.api import Gradebook, MissingEntry

        try:
            with Gradebook(db_url, CourseDirectory(config=self.config).course_id) as gradebook:
                submission = gradebook.find_submission(assignment, student)
                graded = any(g.auto_score is not None or g.manual_score is not None
                             for nb in submission.notebooks for g in nb.grades)
                if not graded:
                    gradebook.remove_submission(assignment, student)
        except MissingEntry:
            pass
        except Exception as err:  # noqa: BLE001 - the grading error itself is what must be reported
            self.log.error("could not remove the ungraded submission of %s/%s: %s", student, assignment, err)

    @staticmethod
    def _outputs(task_id: str, graded: dict | None, result: dict, cell_points: float, first: bool = True) -> list:
        """The outputs of one graded cell; ``first``: the notebook's first graded cell, whose
        feedback alone says which release version was graded."""
        version = result.get("version") or {}
        note = version_note(result) if first else ""
        if graded is None and version:  # a task the graded release version does not have
            return _excused_outputs(task_id, result, cell_points, note)
        if graded is None:
            message = result.get("fatal") or "no hidden checks for this cell"
            return [nbformat.v4.new_output("error", ename="NotGraded", evalue=message, traceback=[message])]
        text = note + rewritten_note(result, task_id) + feedback_text(task_id, graded)
        if result.get("cell_errors"):
            text += "Cells that raised while your notebook ran:\n" + "".join(
                f"  {e}\n" for e in result["cell_errors"][:10])
        if result.get("not_run"):
            # Wrapped like the checks' lines: the feedback shows outputs as preformatted text,
            # where one long line runs off the page sideways.
            note = ("Not run for grading (they only demonstrate, nothing graded depends on them): "
                    + ", ".join(result["not_run"]))
            text += "\n".join(textwrap.wrap(note, width=FEEDBACK_WIDTH, subsequent_indent="  ",
                                            break_on_hyphens=False)) + "\n"
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        # The release graded against may give the task other points than the gradebook's cell
        # (the latest release's): the same fraction of the cell's points.
        fraction = graded["score"] / graded["points"] if graded["points"] else 0.0
        return outputs + _score_outputs(fraction, cell_points, f"{graded['score']:g} / {plural(graded['points'], 'point')}")


def _score_outputs(fraction: float, cell_points: float, what: str) -> list:
    """The outputs nbgrader's SaveAutoGrades reads as ``fraction`` of the cell's points: none for
    full marks, an error for none, the score as the cell's result for part."""
    if fraction <= 0:
        return [nbformat.v4.new_output("error", ename="HiddenChecksFailed", evalue=what,
                                       traceback=["No hidden check of this task passed."])]
    if fraction < 1:
        return [nbformat.v4.new_output("execute_result", data={"text/plain": repr(round(fraction * cell_points, 4))},
                                       execution_count=None)]
    return []


def _excused_outputs(task_id: str, result: dict, cell_points: float, note: str) -> list:
    """A task of the gradebook (the latest release) that the release the student worked on did not
    have: nbgrader keeps one points total per assignment, so it counts at the student's rate on the
    tasks they had, and the assignment's percentage is that of their own release."""
    tasks = result["tasks"].values()
    total = sum(t["points"] for t in tasks)
    fraction = sum(t["score"] for t in tasks) / total if total else 0.0
    text = (note + f"{task_id} was not part of release {result['version']['graded']}, which was "
            f"graded: it is not graded for you. Its {plural(cell_points, 'point')} count at your rate on the tasks you had "
            f"({100 * fraction:.0f}%), so this assignment's percentage is the one you earned on your release.\n")
    return [nbformat.v4.new_output("stream", name="stdout", text=text),
            *_score_outputs(fraction, cell_points, f"{100 * fraction:.0f}% of the tasks of your release")]
