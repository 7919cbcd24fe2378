"""Release versions: a submission is graded against the release its student fetched.

The earlier release is this repository's own history: commit EARLIER, before the setup helper
``_axes_tuple`` of 01 and 02 was renamed, before 05 gained the tasks maxpool_mask and pool_col2im,
and before 07's precision experiment was rewritten (66e10ac) and its pooling experiment asked for
gradient_statistics (5a97785): a commit whose releases were generated from its own source, so
`course release` accepts them. A student who fetched it and solved it hands in its release
notebook with the solution cells of that commit's worked solutions (demo_class.answered). Today's
bundle grades all seven, one student each, in one course folder (``seven``): through `course grade`
(nbgrader's path), and 01's through the grading service first; the release warning, status and
feedback say which version is which. 07's rewritten tasks are graded by the checks its suite keeps
for EARLIER's contracts.
"""
from __future__ import annotations

import contextlib
import datetime
import io
import json
import shutil
import signal
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import determine_grade

from conftest import gradebook_task_scores
from course_lib.tasks import ASSIGNMENTS
from course_tools import release_versions
from course_tools.build import ROOT, release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course
from course_tools.demo_class import DemoClass, Persona, answered
from course_tools.grading.nbgrader.plugin import HiddenSuiteGrader
from course_tools.grading.results import ResultStore
from course_tools.grading.route import grade_one
from course_tools.grading.settings import GradingSettings
from course_tools.grading.suite.run import SUITES, graded_tasks
from course_tools.grading.target import version_note
from course_tools.release_changes import changes
from course_tools.service.pages import graded_page
from grading_support import require_sandbox
from service_support import drop, page_of, rows

EARLIER = "6d5b3f32853267853fcdb1c3da59ce9a34832549"  # releases and solutions generated from their source, before 1985c19 renamed _axes_tuple
# one student of the earlier release per assignment (01 has two: the release warning lists both)
ASSIGNMENTS_IN_ORDER = list(ASSIGNMENTS)
STUDENTS = dict(zip(ASSIGNMENTS_IN_ORDER, ["ada", "cleo", "dan", "eve", "fay", "gus", "hal"]))
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


def test_a_shipped_version_is_written_only_inside_its_scratch_folder_and_matches_the_record(tmp_path, earlier):
    """Cheap (no Dask, no grading): what a Dask task carries (launch/shipped.py) comes back as
    the same version on the other side; a file name outside a release's notebooks and course_lib
    is refused before anything is written."""
    from course_tools.grading.launch import shipped

    v1, _ = two_versions(tmp_path / "course", earlier, "01_forward_ops")
    nb = _write(solved(earlier, "01_forward_ops"), tmp_path / "ada" / "01_forward_ops.ipynb")
    sent = shipped.carried("01_forward_ops", nb, GradingSettings.current(course_root=tmp_path / "course"))
    target = shipped.unpacked(sent, tmp_path / "worker")
    assert release_versions.describe_release(target.release_notebook.parent)["fingerprint"] == v1.fingerprint
    assert (target.course_lib / "ops" / "shaping.py").read_bytes() == (v1.course_lib / "ops" / "shaping.py").read_bytes()
    assert target.version["graded"] == "v1"
    for name in ("../escaped.py", "/tmp/escaped.py", "notes.txt", "course_lib/../../escaped.py"):
        bad = {**sent, "release": {**sent["release"], "files": {**sent["release"]["files"], name: b"x"}}}
        bad["release"]["digest"] = shipped.files_digest(bad["release"]["files"])
        with pytest.raises(shipped.ShippedVersionError, match="outside a release's notebooks and course_lib"):
            shipped.unpacked(bad, tmp_path / "worker2")
        assert not (tmp_path / "worker2").exists()   # nothing written
    assert not (tmp_path / "escaped.py").exists() and not Path("/tmp/escaped.py").exists()


@pytest.mark.slow
def test_dask_workers_that_cannot_see_the_course_folder_grade_each_version_on_its_own(tmp_path, earlier):
    """Workers with the course's commit but not its folder (here: a real LocalCluster in a mount
    namespace where the folder is an empty tmpfs): `course grade --scheduler`'s fan-out sends
    each notebook with the version it is graded against, so ada's v1 notebook keeps every v1
    point (its setup imports v1's `_axes_tuple`: graded with v2's course_lib it loses
    forward_summation) and bob's v2 notebook gets v2's. Before, each was a grading error ("the
    course folder ... is not on this machine"). A version changed on the way is refused."""
    from course_tools.demo_class import filled_release
    from course_tools.grading.launch import shipped
    from course_tools.grading.launch.fanout import Job, grade_jobs
    from course_tools.grading.launch.on_dask import connect, grade_text
    from course_tools.grading.results import bundle_fingerprint
    from course_tools.grading.route import stored_result
    from dask_support import cluster_without
    from grading_support import require_sandbox

    require_sandbox()
    assignment, name = "01_forward_ops", "01_forward_ops.ipynb"
    course_root = tmp_path / "hidden" / "course"
    two_versions(course_root, earlier, assignment)
    jobs = [Job("ada", assignment, _write(solved(earlier, assignment), tmp_path / "ada" / name)),
            Job("bob", assignment, _write(filled_release(assignment), tmp_path / "bob" / name))]
    settings = GradingSettings.current(course_root=course_root)
    store = ResultStore(tmp_path / "store")
    with cluster_without(course_root.parent) as address:
        with connect(address) as client:
            seen = client.run(lambda: (Path(course_root).exists(), Path(course_root.parent).exists()))
        assert seen and all(sees == (False, True) for sees in seen.values()), seen

        report = grade_jobs(jobs, store, settings, scheduler=address, progress=False)
        assert not report.failed and report.graded == 2, report.failed

        with connect(address) as client:
            # What a task carried before: no version, so the worker looked for the course folder.
            future = client.submit(grade_text, assignment, name, jobs[0].notebook.read_text(), bundle_fingerprint(),
                                   settings.as_dict(), None, pure=False)
            assert "is not on this machine" in future.result(timeout=120)["grading_error"]

            sent = shipped.carried(assignment, jobs[0].notebook, settings)
            sent["release"]["files"]["course_lib/ops/shaping.py"] += b"\n# changed on the way\n"
            future = client.submit(grade_text, assignment, name, jobs[0].notebook.read_text(), bundle_fingerprint(),
                                   settings.as_dict(), sent, pure=False)
            with pytest.raises(shipped.ShippedVersionError, match="arrived changed"):
                future.result(timeout=120)
            sent["release"]["digest"] = shipped.files_digest(sent["release"]["files"])  # the digest made to fit
            future = client.submit(grade_text, assignment, name, jobs[0].notebook.read_text(), bundle_fingerprint(),
                                   settings.as_dict(), sent, pure=False)
            with pytest.raises(shipped.ShippedVersionError, match="not the one recorded"):
                future.result(timeout=120)

    v1_tasks, v2_tasks = _earlier_tasks(earlier, assignment), graded_tasks(release_notebook(assignment))
    for job, label, tasks in ((jobs[0], "v1", v1_tasks), (jobs[1], "v2", v2_tasks)):
        _, result = stored_result(store, assignment, job.notebook, job.settings(settings))
        assert result is not None and result["version"] == {"graded": label, "own": label, "latest": "v2",
                                                            "policy": "own"}, result
        assert {t: (r["score"], r["points"]) for t, r in result["tasks"].items()} == {
            t: (p, p) for t, p in tasks.items()}, {
            t: [c["message"] for c in r["checks"] if not c["passed"]][:2] for t, r in result["tasks"].items()}


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
    later = HiddenSuiteGrader._outputs("avgpool_forward", graded, result, 3.0, first=False)
    cell.outputs = later
    assert "Graded against" not in later[0]["text"] and determine_grade(cell) == (1.5, 3.0)


def test_every_graded_task_of_every_release_has_a_contract(earlier):
    """A task's contract is its <task>_code cell; one without such a cell (a task graded from
    course_lib alone) could be rewritten by a release without anyone being told."""
    for assignment in ASSIGNMENTS_IN_ORDER:
        for path in (earlier / "assignments" / assignment / f"{assignment}.ipynb", release_notebook(assignment)):
            nb = nbformat.read(str(path), as_version=4)
            assert set(release_versions.task_contracts(nb)) == set(graded_tasks(path)), path


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
def _point_course_at(folder: Path, release_root: Path, source_root: Path) -> None:
    config = folder / "nbgrader_config.py"
    config.write_text(config.read_text() + f'\nc.CourseDirectory.source_directory = r"{source_root}"\n'
                                           f'c.CourseDirectory.release_directory = r"{release_root}"\n')


@dataclass
class Class:
    """The ``seven`` course folder after grading, and what its commands said on the way."""
    demo: DemoClass                                # 01's class: the course folder, the exchange, homes
    releases: Path                                 # the course's release_directory (today's releases)
    said: dict = field(default_factory=dict)       # step -> (exit status, stdout + stderr)
    labels: dict = field(default_factory=dict)     # moment -> the release label of 01's notebook then

    @property
    def folder(self) -> str:
        return str(self.demo.course_dir)

    def run(self, step: str, *args: str) -> int:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = course([*args, "--course", self.folder])
        self.said[step] = (status, out.getvalue())
        return status


@pytest.fixture(scope="module")
def seven(tmp_path_factory, earlier) -> Class:
    """One course folder; v1 of every assignment is EARLIER's release, v2 today's; one student per
    assignment hands in EARLIER's worked solution, and one `course grade` per assignment grades it.

    01 goes the whole way, as in a semester: `course release` of v1, ada fetches and submits through
    nbgrader, ben's submission lands in the exchange as nbgrader's submit leaves it (the same work),
    `course release` of v2 warns and refuses without --yes, the grading service grades the exchange
    (ada's program once, ben's reused), `course collect`. 02-07 take the short way to the same
    state, because each nbgrader command is a process of several seconds: v1 and v2 recorded as
    `course release` records them, the gradebook registered by one nbgrader generate_assignment of
    all six, the submissions put where `course collect` puts them."""
    require_sandbox()
    base = tmp_path_factory.mktemp("seven")
    releases, sources = base / "releases", base / "sources"
    first = ASSIGNMENTS_IN_ORDER[0]
    shutil.copytree(earlier / "assignments" / first, releases / first)
    shutil.copytree(earlier / "source" / first, sources / first)
    for assignment in ASSIGNMENTS_IN_ORDER[1:]:
        shutil.copytree(release_notebook(assignment).parent, releases / assignment)
        shutil.copytree(ROOT / "source" / assignment, sources / assignment)
    demo = DemoClass(base, first)
    init_course(demo.course_dir, "demo", demo.exchange)  # `course init` without building the student install
    _point_course_at(demo.course_dir, releases, sources)
    made = Class(demo, releases)
    submitted = demo.course_dir / "submitted"

    assert made.run("release v1", "release", first) == 0
    assert demo.fetch("ada") == 0
    fetched = nbformat.read(str(demo.home("ada") / first / f"{first}.ipynb"), as_version=4)
    made.labels["fetched"] = release_versions.claimed_label(fetched)
    work = answered(fetched, nbformat.read(str(earlier / "solutions" / first / f"{first}.ipynb"), as_version=4))
    assert demo.submit(Persona("ada", "solves v1", lambda _: work)) == 0
    drop(demo, "ben", work)
    for assignment in ASSIGNMENTS_IN_ORDER[1:]:
        release_versions.record(demo.course_dir, assignment, earlier / "assignments" / assignment)
        _write(solved(earlier, assignment), submitted / STUDENTS[assignment] / assignment / f"{assignment}.ipynb")

    shutil.rmtree(releases / first)
    shutil.rmtree(sources / first)
    shutil.copytree(release_notebook(first).parent, releases / first)
    shutil.copytree(ROOT / "source" / first, sources / first)
    made.run("release v2 refused", "release", first)
    outbound = demo.exchange / "demo" / "outbound" / first / f"{first}.ipynb"
    made.labels["outbound after the refusal"] = release_versions.claimed_label(nbformat.read(str(outbound),
                                                                                             as_version=4))
    assert made.run("release v2", "release", first, "--yes") == 0, made.said["release v2"]
    with tempfile.TemporaryDirectory() as scratch:  # the gradebook's cells, as `course release` registers them
        # nbgrader reads the id as a glob of source/: 02_backward_ops ... 07_experiments at once
        Course(demo.course_dir).nbgrader_or_fail("generate_assignment", "0[2-7]_*", "--force",
                                                 f"--CourseDirectory.release_directory={scratch}", what="registering")
    for assignment in ASSIGNMENTS_IN_ORDER[1:]:
        release_versions.record(demo.course_dir, assignment, releases / assignment)

    # The grading service, in this process (its fork server is this session's, already warm);
    # `course serve` would install its SIGTERM handler here for good.
    handler = signal.getsignal(signal.SIGTERM)
    try:
        assert made.run("serve", "serve", "--once") == 0, made.said["serve"]
    finally:
        signal.signal(signal.SIGTERM, handler)
    assert made.run("collect", "collect", first) == 0, made.said["collect"]
    for assignment in ASSIGNMENTS_IN_ORDER:
        made.run(f"grade {assignment}", "grade", assignment, "--student", STUDENTS[assignment], "--workers", "1")
    return made


def _earlier_tasks(earlier: Path, assignment: str) -> dict[str, float]:
    return graded_tasks(earlier / "assignments" / assignment / f"{assignment}.ipynb")


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS_IN_ORDER)
def test_each_earlier_solution_keeps_full_marks_on_its_version_through_course_grade(seven, earlier, assignment):
    """What they lost when graded on today's bundle (issue 24): 01 forward_summation and 02
    backward_summation 0/3 (the setup cell imports `_axes_tuple`), 05 maxpool_mask and pool_col2im
    as zeros (added later), 07 experiment_precision 0/4 and experiment_pooling 3/4 (rewritten).
    Graded by `course grade` against v1, each worked solution of EARLIER keeps every point of v1's
    tasks. The hidden suites' result (what feedback and `course report` read) has v1's tasks and
    no others; nbgrader's gradebook keeps one set of cells per assignment (v2's), where a task v1
    lacks counts at the student's rate on v1's tasks: full, never a zero."""
    student = STUDENTS[assignment]
    status, said = seven.said[f"grade {assignment}"]
    assert status == 0, said[-3000:]
    store = ResultStore(seven.demo.course_dir)
    result = store.get(assignment, store.key_of_student(assignment, student))
    assert result is not None and not result.get("grading_error"), said[-3000:]
    v1_tasks = _earlier_tasks(earlier, assignment)
    assert {t: r["points"] for t, r in result["tasks"].items()} == v1_tasks
    assert {t: r["score"] for t, r in result["tasks"].items()} == v1_tasks, {
        t: [c["message"] for c in r["checks"] if not c["passed"]][:2] for t, r in result["tasks"].items()}
    assert result["version"] == {"graded": "v1", "own": "v1", "latest": "v2", "policy": "own"}

    v2_tasks = graded_tasks(seven.releases / assignment / f"{assignment}.ipynb")
    with Course(seven.demo.course_dir).gradebook() as gradebook:
        scores = gradebook_task_scores(gradebook, assignment, v2_tasks)[student]
    assert scores == v2_tasks  # every cell of the gradebook at full marks
    autograded = seven.demo.course_dir / "autograded" / student / assignment / f"{assignment}.ipynb"
    outputs = {c.metadata.get("nbgrader", {}).get("grade_id"): "".join(o.get("text", "") for o in c.get("outputs", []))
               for c in nbformat.read(str(autograded), as_version=4).cells}
    added = set(v2_tasks) - set(v1_tasks)
    assert all(f"{task} was not part of release v1" in outputs[task] for task in added), added
    if assignment == "05_pooling_backward":
        assert {"maxpool_mask", "pool_col2im"} <= added
    # Said once, above the first graded cell's feedback (it was repeated for every task).
    said = [task for task, text in outputs.items() if "Graded against release v1" in text]
    assert said == [next(task for task, text in outputs.items() if task and text)], said
    assert f"Graded against release v1 of {assignment}, the one you worked on (the latest is v2)" in outputs[said[0]]

    page = graded_page(assignment, datetime.datetime(2026, 1, 1), result, show_scores=True)
    assert f"Graded against release v1 of {assignment}, the one you worked on (the latest is v2)" in page
    assert sorted(result.get("earlier_checks", [])) == (sorted(EARLIER_CONTRACTS) if assignment == "07_experiments"
                                                       else [])
    if assignment == "07_experiments":
        assert "A later release rewrote experiment_precision" in version_note(result, "experiment_precision")
        assert "A later release rewrote experiment_precision" in page
        assert "rewrote" not in version_note(result, "loss_scaler")


@pytest.mark.slow
def test_the_checks_kept_for_an_earlier_contract_can_fail(seven, earlier):
    """v1's blank release of 07 (its cells unanswered, a few seconds) scores zero on every task,
    the rewritten ones included."""
    assignment = "07_experiments"
    blank = nbformat.read(str(earlier / "assignments" / assignment / f"{assignment}.ipynb"), as_version=4)
    result = grade_one(assignment, _write(blank, seven.demo.base / "blank" / f"{assignment}.ipynb"),
                       GradingSettings.current(course_root=seven.demo.course_dir))
    assert result["grading_error"] is None and result["version"]["graded"] == "v1", result["grading_error"]
    assert {t: r["score"] for t, r in result["tasks"].items()} == {t: 0 for t in _earlier_tasks(earlier, assignment)}
    assert sorted(result["earlier_checks"]) == sorted(EARLIER_CONTRACTS)


@pytest.mark.slow
def test_releasing_v2_lists_who_holds_v1_and_the_renamed_helper_and_asks_first(seven):
    """01's v2 renames the setup cell's `_axes_tuple`: after ada and ben submitted v1, `course
    release` lists them and the name, and refuses without --force; the exchange keeps v1 until then."""
    assert seven.said["release v1"][0] == 0 and "released 01_forward_ops v1" in seven.said["release v1"][1]
    assert seven.labels["fetched"] == "v1"
    status, said = seven.said["release v2 refused"]
    assert status == 2
    assert "_axes_tuple" in said and "the earlier notebook uses it in setup" in said
    assert "ada: submitted, not collected yet" in said and "ben: submitted, not collected yet" in said
    assert "--force" in said and "released 01_forward_ops v2" not in said
    assert seven.labels["outbound after the refusal"] == "v1"  # nothing replaced
    assert "released 01_forward_ops v2" in seven.said["release v2"][1]
    outbound = seven.demo.exchange / "demo" / "outbound" / "01_forward_ops" / "01_forward_ops.ipynb"
    assert release_versions.claimed_label(nbformat.read(str(outbound), as_version=4)) == "v2"


@pytest.mark.slow
def test_the_grading_service_grades_v1_submissions_against_v1(seven, earlier):
    """Submitted before v2 was released, served after: the service grades ada's program once
    (ben's is the same work, reused), full marks on v1's tasks, and each page names v1; `course
    grade` then stores the same scores (it reuses that grading: one key, the version in it)."""
    served = sorted((r for r in rows(seven.demo) if r["assignment"] == "01_forward_ops"), key=lambda r: r["student"])
    assert [(r["student"], r["outcome"]) for r in served] in (
        [("ada", "graded"), ("ben", "reused")], [("ada", "reused"), ("ben", "graded")])
    assert sum(r["gradings"] for r in served) == 1
    v1_tasks = _earlier_tasks(earlier, "01_forward_ops")
    for row in served:
        scores = {task: tuple(score_points) for task, score_points in json.loads(row["scores"]).items()}
        assert scores == {task: (points, points) for task, points in v1_tasks.items()}
        page = page_of(seven.demo, row)
        assert f"{len(v1_tasks)} of {len(v1_tasks)} tasks pass every hidden check" in page
        assert "Graded against release v1 of 01_forward_ops, the one you worked on (the latest is v2)" in page
    # the blank release graded now, ada's the service's grading
    assert "1 notebook graded now, 1 reused" in seven.said["grade 01_forward_ops"][1]


@pytest.mark.slow
def test_status_says_v1_and_grading_on_the_latest_shows_the_cost_first(seven, earlier):
    """`course status` shows each submission's version. The other policy: on the latest version
    ada's v1 code calls the renamed `_axes_tuple`; the consequences are shown, and nothing reaches
    the gradebook without --yes."""
    assignment = "01_forward_ops"
    assert seven.run("status", "status", assignment) == 0
    out = seven.said["status"][1]
    assert "released version v2" in out and out.count(" v1") >= 2
    points = graded_tasks(seven.releases / assignment / f"{assignment}.ipynb")
    with Course(seven.demo.course_dir).gradebook() as gradebook:
        before = gradebook_task_scores(gradebook, assignment, points)
    assert seven.run("latest", "grade", assignment, "--student", "ada", "--version", "latest") == 1
    out = seven.said["latest"][1]
    assert "nothing was stored in the gradebook" in out
    row = next(line for line in out.splitlines() if line.startswith("ada "))
    v1_total, latest_total = sum(_earlier_tasks(earlier, assignment).values()), sum(points.values())
    assert f"{v1_total:g} / {v1_total:g}" in row and "v1" in row, row  # full marks on v1 (of v1's points) ...
    got_latest = float(row.split()[-3])
    assert row.endswith(f"/ {latest_total:g}") and got_latest < latest_total, row  # ... fewer on v2
    with Course(seven.demo.course_dir).gradebook() as gradebook:
        assert gradebook_task_scores(gradebook, assignment, points) == before
