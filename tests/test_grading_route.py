"""The one route into the hidden suites (course_tools/grading/route.py): every launcher grades
through grade_one with the settings of the command that asked, never with what a process's
environment said when it started."""
from __future__ import annotations

import json
import os
from pathlib import Path

from course_tools.build import release_notebook
from course_tools.grading.launch.pool import grade_many
from course_tools.grading.route import grade_one, is_stored_score, time_limit
from course_tools.grading.launch.runner import grade_in_process
from course_tools.grading.settings import MAX_NOTEBOOK_SECONDS, SLACK_SECONDS, GradingSettings
from course_tools.grading.suite.run import graded_tasks

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_forward_ops"


def _scores(result: dict) -> dict:
    return {task: graded["score"] for task, graded in result["tasks"].items()}


def _wrong_submission(tmp_path: Path) -> Path:
    """The solution with forward_negate broken: one task loses, the others keep full marks."""
    nb = json.loads((ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": (
        "from course_lib.student import implements\nfrom course_lib import ops\n"
        "@implements(ops.Negate, 'compute')\ndef compute(self, a):\n    return a\n")})
    path = tmp_path / f"{ASSIGNMENT}.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_every_launcher_gives_the_same_scores_with_the_settings_it_was_handed(tmp_path, monkeypatch):
    notebook = _wrong_submission(tmp_path)
    # The fork server starts now, with this environment ...
    [(_, warm)] = list(grade_many([("warm", ASSIGNMENT, notebook)], workers=1, settings=GradingSettings.current()))
    assert warm["task_seconds"] == GradingSettings.current().task_seconds
    # ... and is handed other settings later: its children grade with those, not its environment's.
    monkeypatch.setenv("COURSE_GRADER_TASK_SECONDS", "77")
    settings = GradingSettings.current()
    assert settings.task_seconds == 77
    [(_, forked)] = list(grade_many([("forked", ASSIGNMENT, notebook)], workers=1, settings=settings))
    monkeypatch.setenv("COURSE_GRADER_TASK_SECONDS", "5")  # the subprocess must not read it either
    fresh = grade_in_process(ASSIGNMENT, notebook, settings)
    here = grade_one(ASSIGNMENT, notebook, settings)
    for result in (forked, fresh, here):
        assert is_stored_score(result), result.get("grading_error")
        assert result["task_seconds"] == 77
    assert _scores(forked) == _scores(fresh) == _scores(here) == _scores(warm)
    points = graded_tasks(release_notebook(ASSIGNMENT))
    assert _scores(here) == {**points, "forward_negate": 0.0}  # the sabotaged task alone loses


def test_the_time_limit_is_the_budgets_on_the_wall_clock_plus_one_slack_unless_the_instructor_sets_it():
    tasks = len(graded_tasks(release_notebook(ASSIGNMENT)))
    settings = GradingSettings(task_seconds=10, load_seconds=30)
    assert time_limit(ASSIGNMENT, settings) == int((30 + tasks * 10) * settings.limits.wall_factor + SLACK_SECONDS)
    assert time_limit(ASSIGNMENT, GradingSettings(notebook_seconds=45)) == 45
    # The default budgets multiply out to hours; one notebook is capped (settings.MAX_NOTEBOOK_SECONDS).
    assert (30 + tasks * 120) * 4 > MAX_NOTEBOOK_SECONDS
    assert time_limit(ASSIGNMENT, GradingSettings()) == MAX_NOTEBOOK_SECONDS
    assert time_limit(ASSIGNMENT, GradingSettings(max_notebook_seconds=100)) == 100
    assert time_limit(ASSIGNMENT, GradingSettings(notebook_seconds=4000)) == 4000


def test_a_grader_failure_is_a_grading_error_never_a_score(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_broken.py").write_text("raise RuntimeError('the suite itself is broken')\n")
    result = grade_one(ASSIGNMENT, _wrong_submission(tmp_path), GradingSettings.current(), suite_dir=suite)
    assert result["grading_error"] and not is_stored_score(result)


def test_course_grade_unsandboxed_leaves_the_environment_alone(monkeypatch):
    """--unsandboxed travels in the settings and nbgrader's configuration, not in os.environ."""
    from course_tools.course_dir import Course

    monkeypatch.delenv("COURSE_GRADER_UNSANDBOXED", raising=False)
    assert GradingSettings.current(unsandboxed=True).unsandboxed
    assert not GradingSettings.current().unsandboxed
    api = Course(ROOT).api(unsandboxed=True)
    assert api.config.HiddenSuiteGrader.unsandboxed is True
    assert "COURSE_GRADER_UNSANDBOXED" not in os.environ
    assert not Course(ROOT).api().config.HiddenSuiteGrader.get("unsandboxed", False)
