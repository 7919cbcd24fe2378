"""Release versions: a submission is graded against the release its student fetched.

The earlier release is this repository's own history: commit EARLIER, before the setup helper
``_axes_tuple`` of 01 and 02 was renamed, before 05 gained the tasks maxpool_mask and pool_col2im,
and before 07's precision experiment was rewritten (66e10ac) and its pooling experiment asked for
gradient_statistics (5a97785): a commit whose releases were generated from its own source, so
`course release` accepts them. A student who fetched it and solved it hands in its release
notebook with the solution cells of that commit's worked solutions (demo_class.answered). Today's
bundle grades it, one student per case: through `course grade` (nbgrader's path) for 01, through
the one route for 02, 05 and 07; and the release warning, status and feedback say which version
is which. 07's rewritten tasks are graded by the checks its suite keeps for EARLIER's contracts.
"""
from __future__ import annotations

import datetime
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import determine_grade

from conftest import gradebook_task_scores
from course_tools import release_versions
from course_tools.build import ROOT, release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course
from course_tools.demo_class import DemoClass, Persona, answered
from course_tools.grading.nbgrader_plugin import HiddenSuiteGrader
from course_tools.grading.route import grade_one
from course_tools.grading.settings import GradingSettings
from course_tools.grading.suite import SUITES, graded_tasks
from course_tools.grading.target import version_note
from course_tools.grading.target import version_note
from course_tools.release_changes import changes
from course_tools.service.pages import graded_page

EARLIER = "6d5b3f32853267853fcdb1c3da59ce9a34832549"  # releases and solutions generated from their source, before 1985c19 renamed _axes_tuple
ASSIGNMENTS = ("01_forward_ops", "02_backward_ops", "05_pooling_backward", "07_experiments")
# 07's contracts at EARLIER (release_versions.task_contracts of its release), which its suite names
EARLIER_CONTRACTS = {"experiment_pooling": "de1e4117d615", "experiment_precision": "b4bf2f9a3bf9"}


@pytest.fixture(scope="module")
def earlier(tmp_path_factory) -> Path:
    """source/, assignments/ and solutions/ of ASSIGNMENTS at EARLIER, from this repository's history."""
    out = tmp_path_factory.mktemp("earlier")
    paths = [f"{top}/{a}" for top in ("source", "assignments", "solutions") for a in ASSIGNMENTS]
    archive = subprocess.run(["git", "archive", EARLIER, *paths], cwd=ROOT, capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"commit {EARLIER[:7]} is not in this clone's history (a shallow clone?): "
                    f"{archive.stderr.decode()[:200]}")
    tarfile.open(fileobj=io.BytesIO(archive.stdout)).extractall(out)
    return out


def solved(earlier: Path, assignment: str, label: str | None = "v1") -> nbformat.NotebookNode:
    """What a student who fetched the earlier release (labelled ``label``) and solved it hands in."""
    release = nbformat.read(str(earlier / "assignments" / assignment / f"{assignment}.ipynb"), as_version=4)
    if label:
        release.metadata.setdefault("course", {})["release_version"] = label
    return answered(release, nbformat.read(str(earlier / "solutions" / assignment / f"{assignment}.ipynb"),
                                           as_version=4))


@pytest.fixture(scope="module")
def versioned(tmp_path_factory, earlier) -> Path:
    """One course folder for the grading cases: v1 (EARLIER) and v2 (today) of 02, 05 and 07."""
    root = tmp_path_factory.mktemp("versioned")
    for assignment in ("02_backward_ops", "05_pooling_backward", "07_experiments"):
        two_versions(root, earlier, assignment)
    return root


def two_versions(course_root: Path, earlier: Path, assignment: str):
    v1 = release_versions.record(course_root, assignment, earlier / "assignments" / assignment)
    v2 = release_versions.record(course_root, assignment, release_notebook(assignment).parent)
    return v1, v2


def _write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


# ---------------------------------------------------------------------------------- versions and matching
def test_versions_are_recorded_once_read_only_and_checked(tmp_path, earlier):
    v1, v2 = two_versions(tmp_path, earlier, "01_forward_ops")
    assert (v1.label, v2.label) == ("v1", "v2") and v1.fingerprint != v2.fingerprint
    assert release_versions.record(tmp_path, "01_forward_ops", release_notebook("01_forward_ops").parent) == v2
    assert [v.label for v in release_versions.versions(tmp_path, "01_forward_ops")] == ["v1", "v2"]
    stored = v1.course_lib / "ops" / "shaping.py"
    assert "_axes_tuple" in stored.read_text() and not stored.stat().st_mode & 0o222
    stored.chmod(0o644)
    stored.write_text(stored.read_text() + "\n# edited\n")
    with pytest.raises(release_versions.VersionError, match="changed after it was recorded"):
        v1.verify()


def test_submissions_match_their_version_and_nothing_else_is_graded(tmp_path, earlier):
    """Cheap: every refusal happens before a sandbox starts. Each is a grading error naming why."""
    two_versions(tmp_path, earlier, "01_forward_ops")
    settings = GradingSettings.current(course_root=tmp_path)
    name = "01_forward_ops.ipynb"

    def grade(nb):
        return grade_one("01_forward_ops", _write(nb, tmp_path / "sub" / name), settings)

    nb = solved(earlier, "01_forward_ops")
    assert release_versions.match(release_versions.versions(tmp_path, "01_forward_ops"), name, nb).label == "v1"

    edited = solved(earlier, "01_forward_ops")
    setup = next(c for c in edited.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    setup.source += "\nfrom course_lib.ops import summation as _axes_tuple\n"
    result = grade(edited)
    assert result["tasks"] == {} and "matches no release" in result["grading_error"]
    assert "setup (edited)" in result["grading_error"]

    foreign = nbformat.read(str(release_notebook("02_backward_ops")), as_version=4)
    result = grade(foreign)
    assert result["tasks"] == {} and "matches no release of 01_forward_ops" in result["grading_error"]

    # A label that contradicts the cells is refused: the cells decide, and the feedback says so.
    contradicting = solved(earlier, "01_forward_ops", label="v2")
    result = grade(contradicting)
    assert not result.get("grading_error") and result["version"]["graded"] == "v1", result
    assert result["version"]["label_refused"] == "v2"
    assert all(t["score"] == t["points"] for t in result["tasks"].values()), result["tasks"]
    assert "metadata says release v2, but its locked cells are those of v1" in version_note(result)
    # A label the student made up is not repeated back to them (markup, escapes, any length).
    hostile = solved(earlier, "01_forward_ops", label="v2<img src=x onerror=alert(1)>\x1b[2J" + "x" * 10_000)
    result = grade(hostile)
    assert result["version"]["graded"] == "v1" and result["version"]["label_refused"] == "(not a release label)"


def test_a_task_the_version_lacks_counts_at_the_students_rate_in_nbgrader():
    """nbgrader keeps one points total per assignment: a task added by a later release is neither a
    zero nor free points for a student of the earlier one (nbgrader's own determine_grade reads it)."""
    result = {"assignment": "05_pooling_backward", "version": {"graded": "v1", "own": "v1", "latest": "v2",
                                                               "policy": "own"},
              "tasks": {"maxpool_forward": {"points": 2.0, "score": 2.0, "checks": []},
                        "avgpool_forward": {"points": 2.0, "score": 1.0, "checks": []}}}
    cell = nbformat.v4.new_code_cell("", metadata={"nbgrader": {"grade": True, "solution": False, "points": 4,
                                                                "grade_id": "maxpool_mask"}})
    cell.outputs = HiddenSuiteGrader._outputs("maxpool_mask", None, result, 4.0)
    assert determine_grade(cell) == (3.0, 4.0)  # 3 of the 4 points of the tasks v1 had: 75%
    assert "not part of release v1" in cell.outputs[0]["text"]
    # points changed between versions: the same fraction of the gradebook's points
    graded = {"points": 2.0, "score": 1.0, "checks": []}
    cell.metadata.nbgrader.update(grade_id="avgpool_forward", points=3)
    cell.outputs = HiddenSuiteGrader._outputs("avgpool_forward", graded, result, 3.0)
    assert determine_grade(cell) == (1.5, 3.0)
    assert "Graded against release v1 of 05_pooling_backward" in cell.outputs[0]["text"]


def test_a_rewritten_task_is_named_at_release_with_the_checks_kept_for_it(earlier):
    """07's rewrite changed the contracts of two tasks, and the fingerprints its suite keeps checks
    for are those of the earlier release (a change to the fingerprint would strand them)."""
    assignment = "07_experiments"
    old = release_versions.task_contracts(nbformat.read(str(earlier / "assignments" / assignment /
                                                            f"{assignment}.ipynb"), as_version=4))
    new = release_versions.task_contracts(nbformat.read(str(release_notebook(assignment)), as_version=4))
    assert {t for t in old if old[t] != new[t]} == set(EARLIER_CONTRACTS)
    assert {t: old[t] for t in EARLIER_CONTRACTS} == EARLIER_CONTRACTS
    suite = (SUITES / assignment / "test_experiments.py").read_text()
    assert all(f'"{c}"' in suite for c in EARLIER_CONTRACTS.values())
    lines = changes(earlier / "assignments" / assignment, release_notebook(assignment).parent)
    rewritten = [line for line in lines if line.startswith("rewritten: ")]
    assert [line.split()[1] for line in rewritten] == ["experiment_pooling_code", "experiment_precision_code"]
    assert all("the hidden suite names" in line for line in rewritten), rewritten
    # comment lines and blank lines are no new contract; a renamed function is
    contract, code = release_versions.code_contract, "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    assert contract(code) == contract(code.replace("    # YOUR", "\n  # your"))
    assert contract(code) != contract(code.replace("f(", "g("))


def test_feedback_says_which_version_was_graded_when_it_is_not_the_latest():
    def note(graded, own, latest, earlier_checks=()):
        return version_note({"assignment": "07_experiments", "earlier_checks": list(earlier_checks),
                             "version": {"graded": graded, "own": own, "latest": latest}}, "experiment_precision")

    assert note("v2", "v2", "v2", ["experiment_precision"]) == ""  # the latest: nothing to say
    assert note("v1", "v1", "v2").startswith("Graded against release v1 of 07_experiments, the one you worked on")
    assert "rewrote" not in note("v1", "v1", "v2")
    assert "A later release rewrote experiment_precision" in note("v1", "v1", "v2", ["experiment_precision"])
    assert note("v2", "v1", "v2") == ("Graded against the latest release v2 of 07_experiments (you worked on v1), "
                                      "as your instructor chose.\n")
    assert version_note({"assignment": "x", "tasks": {}}) == ""  # no versions kept


# ---------------------------------------------------------------------------------- real grading
@pytest.mark.slow
@pytest.mark.parametrize("assignment", ["02_backward_ops", "05_pooling_backward", "07_experiments"])
def test_the_earlier_release_keeps_full_marks_on_its_own_tasks(versioned, earlier, assignment):
    """What each lost when graded on today's bundle (issue 24): 02 backward_summation 0/3 (the setup
    cell imports `_axes_tuple`), 05 maxpool_mask and pool_col2im as zeros (added later), 07
    experiment_precision 0/4 and experiment_pooling 3/4 (rewritten). Graded against v1 by today's
    hidden suites in the sandbox, the worked solution of EARLIER keeps every point of v1's tasks."""
    notebook = _write(solved(earlier, assignment), versioned / "sub" / assignment / f"{assignment}.ipynb")
    result = grade_one(assignment, notebook, GradingSettings.current(course_root=versioned))
    assert result["grading_error"] is None, result["grading_error"]
    v1_tasks = graded_tasks(earlier / "assignments" / assignment / f"{assignment}.ipynb")
    assert {t: r["points"] for t, r in result["tasks"].items()} == v1_tasks
    assert {t: r["score"] for t, r in result["tasks"].items()} == v1_tasks, {
        t: [c["message"] for c in r["checks"] if not c["passed"]][:2] for t, r in result["tasks"].items()}
    assert result["version"] == {"graded": "v1", "own": "v1", "latest": "v2", "policy": "own"}
    if assignment == "05_pooling_backward":
        assert {"maxpool_mask", "pool_col2im"} <= set(graded_tasks(release_notebook(assignment))) - set(result["tasks"])
    page = graded_page(assignment, datetime.datetime(2026, 1, 1), result, show_scores=True)
    assert f"Graded against release v1 of {assignment}, the one you worked on (the latest is v2)" in page
    assert sorted(result.get("earlier_checks", [])) == (sorted(EARLIER_CONTRACTS) if assignment == "07_experiments"
                                                       else [])
    if assignment == "07_experiments":
        assert "A later release rewrote experiment_precision" in version_note(result, "experiment_precision")
        assert "A later release rewrote experiment_precision" in page
        assert "rewrote" not in version_note(result, "loss_scaler")
        # the kept checks can fail: v1's blank release (its cells unanswered, a few seconds) scores zero
        blank = nbformat.read(str(earlier / "assignments" / assignment / f"{assignment}.ipynb"), as_version=4)
        result = grade_one(assignment, _write(blank, versioned / "blank" / f"{assignment}.ipynb"),
                           GradingSettings.current(course_root=versioned))
        assert result["grading_error"] is None and result["version"]["graded"] == "v1", result["grading_error"]
        assert {t: r["score"] for t, r in result["tasks"].items()} == {t: 0 for t in v1_tasks}
        assert sorted(result["earlier_checks"]) == sorted(EARLIER_CONTRACTS)


def _point_course_at(folder: Path, release_root: Path, source_root: Path) -> None:
    config = folder / "nbgrader_config.py"
    config.write_text(config.read_text() + f'\nc.CourseDirectory.source_directory = r"{source_root}"\n'
                                           f'c.CourseDirectory.release_directory = r"{release_root}"\n')


@pytest.mark.slow
def test_a_renamed_helper_costs_students_of_the_earlier_release_nothing(tmp_path, earlier, capsys):
    """01 released from EARLIER; ada and ben fetch and solve it. The instructor then releases today's
    01 (the setup cell's `_axes_tuple` renamed): the release lists them and the name, and refuses
    without --force. `course grade` (nbgrader's path) gives ada full marks on v1 (one student
    graded: ben's submission is the same work); status and feedback say v1."""
    assignment = "01_forward_ops"
    releases, sources = tmp_path / "releases", tmp_path / "sources"
    shutil.copytree(earlier / "assignments" / assignment, releases / assignment)
    shutil.copytree(earlier / "source" / assignment, sources / assignment)
    demo = DemoClass(tmp_path / "class", assignment)
    folder = str(demo.course_dir)
    init_course(demo.course_dir, "demo", demo.exchange)  # `course init` without building the student install
    _point_course_at(demo.course_dir, releases, sources)
    assert course(["release", assignment, "--course", folder]) == 0
    assert "released 01_forward_ops v1" in capsys.readouterr().out
    for student in ("ada", "ben"):
        assert demo.fetch(student) == 0
        fetched = demo.home(student) / assignment / f"{assignment}.ipynb"
        assert release_versions.claimed_label(nbformat.read(str(fetched), as_version=4)) == "v1"
        work = answered(nbformat.read(str(fetched), as_version=4),
                        nbformat.read(str(earlier / "solutions" / assignment / f"{assignment}.ipynb"), as_version=4))
        assert demo.submit(Persona(student, "solves v1", lambda _, work=work: work)) == 0

    shutil.rmtree(releases / assignment)
    shutil.rmtree(sources / assignment)
    shutil.copytree(release_notebook(assignment).parent, releases / assignment)
    shutil.copytree(ROOT / "source" / assignment, sources / assignment)
    capsys.readouterr()
    assert course(["release", assignment, "--course", folder]) == 2
    captured = capsys.readouterr()
    assert "_axes_tuple" in captured.out and "the earlier notebook uses it in setup" in captured.out
    assert "ada: submitted, not collected yet" in captured.out and "ben: submitted, not collected yet" in captured.out
    assert "--force" in captured.err
    outbound = demo.exchange / "demo" / "outbound" / assignment / f"{assignment}.ipynb"
    assert release_versions.claimed_label(nbformat.read(str(outbound), as_version=4)) == "v1"  # nothing replaced
    assert course(["release", assignment, "--course", folder, "--yes"]) == 0
    assert release_versions.claimed_label(nbformat.read(str(outbound), as_version=4)) == "v2"

    assert course(["collect", assignment, "--course", folder]) == 0
    assert course(["grade", assignment, "--course", folder, "--student", "ada", "--workers", "1"]) == 0
    points = graded_tasks(releases / assignment / f"{assignment}.ipynb")
    with Course(demo.course_dir).gradebook() as gradebook:
        scores = gradebook_task_scores(gradebook, assignment, points)
    assert scores["ada"] == points  # forward_summation 3 of 3: `_axes_tuple` was there in v1
    capsys.readouterr()
    assert course(["status", assignment, "--course", folder]) == 0
    out = capsys.readouterr().out
    assert "released version v2" in out and out.count(" v1") >= 2
    autograded = demo.course_dir / "autograded" / "ada" / assignment / f"{assignment}.ipynb"
    text = "".join(o.get("text", "") for c in nbformat.read(str(autograded), as_version=4).cells
                   for o in c.get("outputs", []))
    assert "Graded against release v1 of 01_forward_ops, the one you worked on (the latest is v2)" in text

    # The other policy: on the latest version ada's v1 code calls the renamed `_axes_tuple`. The
    # consequences are shown, and nothing reaches the gradebook without --yes.
    capsys.readouterr()
    assert course(["grade", assignment, "--course", folder, "--student", "ada", "--version", "latest"]) == 1
    out = capsys.readouterr().out
    assert "nothing was stored in the gradebook" in out
    row = next(line for line in out.splitlines() if line.startswith("ada "))
    full = f"{sum(points.values()):g} / {sum(points.values()):g}"
    assert row.count(full) == 1 and "v1" in row, row  # full marks on v1, fewer on v2
    with Course(demo.course_dir).gradebook() as gradebook:
        assert gradebook_task_scores(gradebook, assignment, points) == scores
