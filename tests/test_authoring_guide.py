"""The authoring guide (docs/adding-a-task.md), followed as it is written, in a scratch copy of the bundle.

The test reads the page and does what its marked code blocks say, in order, in a copy of this
repository (tmp_path): nothing of the guide is copied here, so a guide that no longer works fails.
A block is marked by its class (MyST's ``{code-block}`` directive, ``:class:`` option); blocks
without one of these classes are for reading only:

    ```{code-block} diff            an edit of an existing file: the lines that start with " " or "-"
    :caption: <path>                must occur exactly once in <path>, and become the lines that
    :class: guide-edit              start with " " or "+"
    ```

    ```{code-block} python          code added at the end of <path> (after one blank line)
    :caption: <path>
    :class: guide-append
    ```

    :class: guide-script            Python, run with this interpreter in the bundle's root
    :class: guide-run               bash, run in the bundle's root; it must succeed
    :class: guide-refused           bash, run in the bundle's root; it must fail (a refusal)
    :name: guide-...                a block the test refers to (a student submits before guide-grade)

The class before the guide: a course folder ~/dlsys-2027 (HOME is a scratch folder) that released
01_forward_ops as v1; ada fetched it and submitted the worked solution. Between the guide's v2
release and its grading, bea fetches v2 and submits it solved. The test then checks: the new task
is graded (bea: full marks on it, on v2), its known mistake is named (the guide's calibration run,
and the mutant that is that mistake), its mutants are killed, and ada is graded on v1. The guide's
step 6 changes an existing task (forward_relu) in the same v2, with no build or grading of its own:
bea's fetched v2 shows its new instruction sentence, `course release` lists the changed cell, and
both students keep full marks on it, under the check's new name.

How the copy runs its own code: every command runs with PYTHONPATH at the copy, and `course` on
PATH is ``python -m course_tools.cli``, so `course`, pytest and the grader import the copy. Kernels
drop PYTHONPATH (course_student/env.py: tool_env), so the solution kernel of `course build` would
import the installed course_lib; the copy's source/01_forward_ops gets a link to the copy's
course_lib (the kernel's working directory comes first), in tmp_path only. nbgrader's own
subprocesses (registering, releasing, collecting) import the installed course_tools: nothing in
them depends on where the bundle is, and grading (`course grade`) runs in the `course` process.

Cost: one assignment built, the guide's pytest run (two gradings), ten mutants on two
workers, two releases and one `course grade` of two notebooks (about 3 minutes on 2 cores).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from conftest import gradebook_task_scores
from course_tools.course_dir import Course
from course_tools.demo_class import DemoClass, Persona, answered
from course_tools.grading.results import STORE_NAME, ResultStore
from course_tools.grading.suite.run import graded_tasks
from grading_support import require_sandbox

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "adding-a-task.md"
ASSIGNMENT, TASK, MISTAKE = "01_forward_ops", "forward_sigmoid", "sigmoid_sign_of_the_exponent"
CHANGED, CHANGED_CELL = "forward_relu", "relu_md"  # the existing task that the guide changes in the same v2
COPIED = ["course_lib", "course_student", "course_tools", "autograder", "source", "assignments", "solutions",
          "tests", "docs", "nbgrader_config.py", "pyproject.toml"]
CLASSES = {"guide-edit", "guide-append", "guide-script", "guide-run", "guide-refused"}


@dataclass
class Block:
    language: str
    options: dict
    text: str
    line: int  # where it starts on the page, for messages

    @property
    def kind(self) -> str | None:
        found = CLASSES & set(self.options.get("class", "").split())
        return found.pop() if found else None

    @property
    def name(self) -> str:
        return self.options.get("name", f"line {self.line}")


def guide_blocks(page: str) -> list[Block]:
    """The page's ```{code-block} blocks, in order: their language, options and text."""
    lines, blocks, i = page.splitlines(), [], 0
    while i < len(lines):
        opening = re.match(r"```\{code-block\}\s*(\S*)\s*$", lines[i])
        i += 1
        if not opening:
            continue
        start, options = i, {}
        while i < len(lines) and (option := re.match(r":([\w-]+):\s*(.*)$", lines[i])):
            options[option.group(1)] = option.group(2).strip()
            i += 1
        if i < len(lines) and not lines[i].strip():
            i += 1  # the blank line after the options
        body = []
        while lines[i] != "```":
            body.append(lines[i])
            i += 1
        blocks.append(Block(opening.group(1), options, "\n".join(body) + "\n", start))
    return blocks


def apply_edit(path: Path, diff: str) -> None:
    before = "".join(line[1:] + "\n" for line in diff.splitlines() if line[:1] in (" ", "-", ""))
    after = "".join(line[1:] + "\n" for line in diff.splitlines() if line[:1] in (" ", "+", ""))
    text = path.read_text()
    assert text.count(before) == 1, f"{path.name}: the guide's edit expects these lines once:\n{before}"
    path.write_text(text.replace(before, after))


def append(path: Path, code: str) -> None:
    path.write_text(path.read_text().rstrip("\n") + "\n\n\n" + code.strip("\n") + "\n")


@dataclass
class Followed:
    bundle: Path
    course: Path
    said: dict            # block name -> (exit status, output)
    seconds: dict         # block name -> seconds
    demo: DemoClass       # the exchange and the students' homes


def _copy_bundle(bundle: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "_build", "reference", "*.egg-info")
    for part in COPIED:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, bundle / part, ignore=ignore, symlinks=False)
        else:
            shutil.copy2(source, bundle / part)
    link = bundle / "source" / ASSIGNMENT / "course_lib"
    if link.exists():  # a checkout's own local aid, copied as a folder
        shutil.rmtree(link)
    link.symlink_to(bundle / "course_lib", target_is_directory=True)


def _environment(base: Path, bundle: Path, home: Path) -> dict:
    shims = base / "bin"
    shims.mkdir()
    course = shims / "course"
    course.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m course_tools.cli "$@"\n')
    course.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(bundle), "HOME": str(home),
           "PATH": os.pathsep.join([str(shims), str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    for name in ("COURSE_DIR", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    return env


def _run(args: list[str], bundle: Path, env: dict) -> tuple[int, str]:
    done = subprocess.run(args, cwd=bundle, env=env, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def followed(tmp_path_factory) -> Followed:
    require_sandbox()
    base = tmp_path_factory.mktemp("authoring")
    bundle, home = base / "bundle", base / "instructor"
    home.mkdir()
    _copy_bundle(bundle)
    env = _environment(base, bundle, home)
    course = home / "dlsys-2027"
    said, seconds = {}, {}
    demo = DemoClass(base, ASSIGNMENT)  # the exchange and the students' homes

    # The class before the guide: v1 released, ada has submitted it.
    status, out = _run([sys.executable, "-c", "import sys; from course_tools.course_dir import init_course; "
                        "init_course(sys.argv[1], 'demo', sys.argv[2])", str(course), str(demo.exchange)], bundle, env)
    assert status == 0, out
    status, out = _run(["course", "release", ASSIGNMENT, "--course", str(course)], bundle, env)
    assert status == 0 and "v1" in out, out

    def solve(student: str) -> Persona:
        solution = nbformat.read(str(bundle / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)
        fetched = nbformat.read(str(demo.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)
        return Persona(student, "solves the release they fetched", lambda _: answered(fetched, solution))

    assert demo.fetch("ada") == 0 and demo.submit(solve("ada")) == 0

    blocks = [b for b in guide_blocks(GUIDE.read_text()) if b.kind]
    names = {b.options.get("name") for b in blocks}
    assert {"guide-calibrate", "guide-mutants", "guide-release-refused", "guide-release", "guide-grade"} <= names
    for block in blocks:
        start = time.perf_counter()
        if block.name == "guide-grade":  # a student who fetches the new version and solves it
            assert demo.fetch("bea") == 0 and demo.submit(solve("bea")) == 0
        if block.kind == "guide-edit":
            apply_edit(bundle / block.options["caption"], block.text)
        elif block.kind == "guide-append":
            append(bundle / block.options["caption"], block.text)
        else:
            if block.kind == "guide-script":
                command = [sys.executable, "-c", block.text]
            else:
                command = ["bash", "-e", "-c", block.text]
            status, out = _run(command, bundle, env)
            said[block.name] = (status, out)
            if block.kind == "guide-refused":
                assert status != 0, f"the guide's block at {block.name} should be refused:\n{out[-3000:]}"
            else:
                assert status == 0, f"the guide's block at {block.name} failed:\n{block.text}\n{out[-5000:]}"
        seconds[block.name] = time.perf_counter() - start
    print("seconds per block of the guide:", {k: round(v, 1) for k, v in seconds.items()})
    return Followed(bundle, course, said, seconds, demo)


def test_the_guide_fits_todays_files(tmp_path):
    """Quick, and without a sandbox: every edit of the guide finds its lines once in this checkout,
    every file it adds to exists, and its notebook script runs on a copy of the source notebook.
    (The slow tests below follow the whole guide.)"""
    blocks = [b for b in guide_blocks(GUIDE.read_text()) if b.kind]
    kinds = [b.kind for b in blocks]
    assert {kind: kinds.count(kind) for kind in sorted(CLASSES)} == {
        "guide-append": 4, "guide-edit": 4, "guide-refused": 1, "guide-run": 5, "guide-script": 1}
    shutil.copytree(ROOT / "source" / ASSIGNMENT, tmp_path / "bundle" / "source" / ASSIGNMENT)
    for block in blocks:
        if block.kind in ("guide-edit", "guide-append"):
            target = tmp_path / "bundle" / block.options["caption"]
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / block.options["caption"], target)
            (apply_edit if block.kind == "guide-edit" else append)(target, block.text)
    (script,) = [b for b in blocks if b.kind == "guide-script"]
    status, out = _run([sys.executable, "-c", script.text], tmp_path / "bundle", dict(os.environ))
    assert status == 0, out
    nb = nbformat.read(str(tmp_path / "bundle" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)
    assert TASK in [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]


def _result(followed: Followed, student: str) -> dict:
    store = ResultStore(followed.course)
    result = store.get(ASSIGNMENT, store.key_of_student(ASSIGNMENT, student))
    assert result is not None and not result.get("grading_error"), result
    return result


@pytest.mark.slow
def test_the_new_task_is_graded_for_a_student_of_the_new_version(followed):
    result = _result(followed, "bea")
    assert result["version"]["graded"] == "v2", result["version"]
    graded = result["tasks"][TASK]
    assert graded["score"] == graded["points"] == 1, graded
    assert all(r["score"] == r["points"] for r in result["tasks"].values()), result["tasks"]


@pytest.mark.slow
def test_its_known_mistake_is_named(followed):
    """The guide's calibration run grades the catalogue case (its diagnosis is asserted there), and
    the mutant that drops the minus sign is that very mistake: its feedback names it."""
    catalogue = (followed.bundle / "tests" / "fixtures" / "wrong_submissions" / f"{ASSIGNMENT}.py").read_text()
    assert f'diagnosis={{"{TASK}": "{MISTAKE}"}}' in catalogue
    status, calibration = followed.said["guide-calibrate"]
    assert status == 0 and re.search(r"\b9 passed\b", calibration), calibration[-2000:]
    named = []
    for path in (followed.bundle / ".mutants" / STORE_NAME / ASSIGNMENT).glob("*.json"):
        graded = json.loads(path.read_text()).get("tasks", {}).get(TASK) or {}
        if graded.get("diagnosis"):
            named.append(graded["diagnosis"]["name"])
    assert set(named) == {MISTAKE}, named  # the mutant "-a -> a" (others are not this mistake)


@pytest.mark.slow
def test_every_mutant_of_the_new_task_is_killed(followed):
    summary = json.loads((followed.bundle / ".mutants" / "report" / "summary.json").read_text())
    row = summary["tasks"][TASK]
    assert row["mutants"] >= 5 and row["killed"] == row["mutants"] and row["survived"] == 0, row
    assert set(summary["tasks"]) == {TASK}  # only the new task's mutants were graded


@pytest.mark.slow
def test_the_release_of_v2_names_who_holds_v1_and_ada_is_graded_on_v1(followed):
    status, out = followed.said["guide-release-refused"]
    assert "ada" in out and TASK in out and "--yes" in out, out[-3000:]
    assert "released 01_forward_ops v2" in followed.said["guide-release"][1]

    result = _result(followed, "ada")
    assert result["version"] == {"graded": "v1", "own": "v1", "latest": "v2", "policy": "own"}
    assert TASK not in result["tasks"]
    assert all(r["score"] == r["points"] for r in result["tasks"].values()), result["tasks"]
    v2_points = graded_tasks(followed.bundle / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    assert TASK in v2_points
    with Course(followed.course).gradebook() as gradebook:
        scores = gradebook_task_scores(gradebook, ASSIGNMENT, v2_points)
    assert scores["ada"] == v2_points and scores["bea"] == v2_points  # ada's sigmoid counts at her rate: full


def _guide_edit(caption: str) -> tuple[str, str]:
    """The lines that the guide's edit of ``caption`` removes and adds (one edit per file here)."""
    (block,) = [b for b in guide_blocks(GUIDE.read_text()) if b.kind == "guide-edit" and b.options["caption"] == caption]
    lines = block.text.splitlines()
    return ("\n".join(l[1:] for l in lines if l.startswith("-")), "\n".join(l[1:] for l in lines if l.startswith("+")))


@pytest.mark.slow
def test_the_changed_task_reaches_students_of_v2_and_is_still_graded_in_full(followed):
    """Step 6: an existing task changed in the same v2. What students get: bea's fetched v2 has the
    corrected sentence and ada's v1 keeps the earlier one; the release's summary names the changed
    cell; both are graded in full on the task, and their feedback names the check by its new name."""
    removed, added = _guide_edit(f"source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    old_sentence, new_sentence = (json.loads(line.strip().rstrip(",")) for line in (removed, added))

    def instruction(student: str) -> str:
        nb = nbformat.read(str(followed.demo.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)
        (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == CHANGED_CELL]
        return cell.source

    assert new_sentence.strip() in instruction("bea") and old_sentence.strip() not in instruction("bea")
    assert old_sentence.strip() in instruction("ada")
    refused = followed.said["guide-release-refused"][1]
    assert re.search(rf"locked cells changed: .*\b{CHANGED_CELL}\b", refused), refused[-3000:]

    old_name, new_name = (line.strip().strip('"') for line in _guide_edit(f"autograder/{ASSIGNMENT}/test_forward_ops.py"))
    for student in ("ada", "bea"):
        graded = _result(followed, student)["tasks"][CHANGED]
        assert graded["score"] == graded["points"] > 0, graded
        names = {check["check"] for check in graded["checks"]}
        assert new_name in names and old_name not in names, names
