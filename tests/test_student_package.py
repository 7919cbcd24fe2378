"""The student install, built and installed into a fresh virtual environment as a hub would.

`course student-package` builds the wheel; a new venv (`python -m venv`) gets it with
`pip install --no-deps`, as no registry is reached here. Its dependencies (nbgrader, NumPy,
Jupyter) come from this environment's site-packages through a .pth line: that puts the folder
on sys.path without running the .pth files inside it, so the full bundle's editable install
stays out (the tests assert it does). nbgrader's own Jupyter settings, which pip would have
installed beside ours, are copied in. About 30 s on a 2-core machine, most of it two kernels.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from conftest import code_units, given_lines, hidden_code_lines, leaks, significant_lines
from course_lib import tasks
from course_tools.demo_class import filled_release
from course_tools.regions import find_regions, library_regions, notebook_region_bodies, stub_line
from course_tools.student_package import NAME, build_student_package

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "01_forward_ops"
STUDENT_COMMANDS = {"fetch", "submit", "check"}
FORBIDDEN_PARTS = {"autograder", "solutions", "source", "course_tools", "tests", ".git"}


@dataclass
class Install:
    wheel: Path
    venv: Path
    purelib: Path      # the fresh venv's site-packages
    files: list[Path]  # every file pip installed from the wheel (its RECORD)
    env: dict          # the environment of a student's shell in that venv

    def run(self, *args, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout)

    def python(self, code: str, cwd: Path) -> subprocess.CompletedProcess:
        return self.run(str(self.venv / "bin" / "python"), "-c", code, cwd=cwd)


def _purelib(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def install(tmp_path_factory) -> Install:
    base = tmp_path_factory.mktemp("student-install")
    wheel = build_student_package(base / "dist")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    result = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    purelib = _purelib(python)
    # This environment's packages as the dependencies (see the module docstring).
    (purelib / "zz_course_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # nbgrader's own server settings, which `pip install nbgrader` there would have written.
    settings = Path("etc/jupyter/jupyter_server_config.d/nbgrader.json")
    (venv / settings).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(sys.prefix) / settings, venv / settings)
    record = next(purelib.glob("course_student-*.dist-info")) / "RECORD"
    files = [(purelib / line.split(",")[0]).resolve() for line in record.read_text().splitlines() if line]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "JUPYTER_PATH")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               JUPYTER_CONFIG_DIR=str(base / "jupyter-config"))  # no user settings of this machine's account
    return Install(wheel, venv, purelib, files, env)


def test_the_package_holds_only_the_student_commands_and_course_lib(install):
    names = zipfile.ZipFile(install.wheel).namelist()
    top = {name.split("/")[0] for name in names}
    version = install.wheel.name.split("-")[1]
    assert top == {"course_lib", "course_student", f"course_student-{version}.dist-info",
                   f"course_student-{version}.data"}, top
    shipped_student = {n.removeprefix("course_student/") for n in names if n.startswith("course_student/")}
    assert shipped_student == {p.relative_to(ROOT / "course_student").as_posix()
                               for p in (ROOT / "course_student").rglob("*.py") if "__pycache__" not in p.parts}
    shipped_lib = {n.removeprefix("course_lib/") for n in names if n.startswith("course_lib/") and n.endswith(".py")}
    assert shipped_lib == {p.relative_to(ROOT / "course_lib").as_posix()
                           for p in (ROOT / "course_lib").rglob("*.py") if "__pycache__" not in p.parts}
    assert not [n for n in names if n.endswith(".ipynb")]
    for path in install.files:
        inside = path.relative_to(install.venv) if path.is_relative_to(install.venv) else path
        assert not FORBIDDEN_PARTS & set(inside.parts), path
    assert not list(install.venv.rglob(".git")), "a repository's history is in the student install"


def test_the_dependencies_are_the_students_only(install):
    wheel = zipfile.ZipFile(install.wheel)
    metadata, entry_points = (wheel.read(next(n for n in wheel.namelist() if n.endswith(f".dist-info/{name}"))).decode()
                              for name in ("METADATA", "entry_points.txt"))
    required = {re.split(r"[\s<>=!~;\[]", line.split(":", 1)[1].strip())[0].lower()
                for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line}
    # bleach: the course's HTML allow-list (course_tools/markup.py); nbconvert requires it anyway.
    # jupyter-server-mathjax: the feedback a student opens typesets its math without a CDN.
    assert required == {"numpy", "tqdm", "threadpoolctl", "matplotlib", "nbgrader", "jupyterlab", "notebook",
                        "nbformat", "nbclient", "bleach", "jupyter-server-mathjax"}
    # watchdog is the grading service's (course serve): the grader's environment, never a student's.
    assert not re.search(r"^Requires-Dist: (torch|dask|psycopg2|watchdog)", metadata, re.M)
    assert "course = course_student.cli:main" in entry_points
    # The local label is a hash of the contents: a changed package is a new version pip upgrades to.
    assert re.fullmatch(r"\d+\.\d+\.\d+\+[0-9a-f]{12}", install.wheel.name.split("-")[1]), install.wheel.name


def test_no_solution_or_hidden_test_text_is_installed(install):
    """Every file pip installed, against every course_lib region, every solution cell of the
    source notebooks, and every hidden suite (lines students see anyway do not count)."""
    given = given_lines()
    secrets = [significant_lines(r.body) - given for regions in library_regions().values() for r in regions]
    for notebook in sorted((ROOT / "source").glob("*/*.ipynb")):
        for cell in nbformat.read(str(notebook), as_version=4).cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                secrets += [significant_lines(body) - given for body in notebook_region_bodies(cell.source)]
    hidden = [unit for p in (ROOT / "autograder").rglob("*.py") for unit in code_units(p.read_text(), given)]
    hidden_lines = set(hidden_code_lines()) - given
    tree = install.wheel.parent / NAME  # the folder the wheel was built from: `pip install <folder>` takes it
    checked = 0
    for path in install.files + sorted(p for p in tree.rglob("*") if p.is_file()):
        if path.suffix in (".py", ".json", ".md", ".txt", ".toml") or path.name in ("METADATA", "RECORD"):
            text = path.read_text()
            found = leaks(secrets + hidden, text)
            assert not found, f"{path} holds solution or hidden-test code: {found[:2]}"
            assert not hidden_lines & {line.strip() for line in text.splitlines()}, path
            assert "BEGIN SOLUTION" not in text or path.name == "tasks.py", path  # tasks.py only names the marker
            checked += 1
    assert checked > 60


def test_every_solution_region_is_a_stub_naming_its_task(install):
    stubs = 0
    for path in sorted((ROOT / "course_lib").rglob("*.py")):
        installed = (install.purelib / path.relative_to(ROOT)).read_text()
        assert installed.startswith(f"# Generated from {path.relative_to(ROOT).as_posix()} for the student install")
        for region in find_regions(path.read_text()):
            assert stub_line(region.task, tasks.assignment_of(region.task)) in installed, (path, region.task)
            stubs += 1
    assert stubs == sum(len(regions) for regions in library_regions().values())


def test_course_lib_is_the_stubbed_one_and_the_bundle_stays_out(install, tmp_path):
    out = install.python(
        "import importlib.util, course_lib\n"
        "from course_lib import ops\n"
        "print(course_lib.__file__)\n"
        "print([m for m in ('course_tools', 'autograder') if importlib.util.find_spec(m)])\n"
        "try:\n"
        "    ops.PowerScalar(2).compute(None)\n"
        "except NotImplementedError as err:\n"
        "    print(err)\n", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    where, importable, error = out.stdout.splitlines()
    assert Path(where).is_relative_to(install.purelib), where
    assert importable == "[]", "the full bundle leaked into the student install"
    assert error == "forward_power_scalar: not implemented yet; you write it in assignment 01_forward_ops"


def test_course_lists_only_the_student_commands(install, tmp_path):
    out = install.run(str(install.venv / "bin" / "course"), "--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    listed = set(re.findall(r"^    ([a-z][a-z-]*)\s", out.stdout, re.M))
    assert listed == STUDENT_COMMANDS, out.stdout
    out = install.run(str(install.venv / "bin" / "course"), "grade", ASSIGNMENT, cwd=tmp_path)
    assert out.returncode == 2 and "invalid choice: 'grade'" in out.stderr


def test_course_check_fails_a_blank_release_and_passes_a_finished_one(install, tmp_path):
    folder = tmp_path / ASSIGNMENT
    shutil.copytree(ROOT / "assignments" / ASSIGNMENT, folder, ignore=shutil.ignore_patterns("__pycache__"))
    notebook = folder / f"{ASSIGNMENT}.ipynb"
    course = str(install.venv / "bin" / "course")
    blank = install.run(course, "check", str(notebook), "--timeout", "120", cwd=tmp_path)
    count = len(tasks.LIBRARY_TASKS[ASSIGNMENT])
    assert blank.returncode == 1, blank.stdout + blank.stderr
    assert f"0 of {count} checks pass" in blank.stdout and "not implemented yet" in blank.stdout
    nbformat.write(filled_release(ASSIGNMENT), str(notebook))
    done = install.run(course, "check", str(notebook), "--timeout", "120", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{count} of {count} checks pass" in done.stdout


def test_nbgrader_instructor_parts_are_off_and_the_students_on(install, tmp_path):
    python = str(install.venv / "bin" / "python")
    server = install.run(python, "-m", "jupyter_server", "extension", "list", cwd=tmp_path)
    state = dict(re.findall(r"nbgrader\.server_extensions\.(\w+) \S*(enabled|disabled)", server.stdout + server.stderr))
    assert state == {"formgrader": "disabled", "assignment_list": "enabled", "validate_assignment": "enabled",
                     "course_list": "enabled"}, server.stdout + server.stderr
    # JupyterLab's own listing, with the nbgrader labextension of this environment in view.
    lab = subprocess.run([python, "-m", "jupyterlab.labextensions", "list"], cwd=tmp_path, capture_output=True,
                         text=True, env={**install.env, "JUPYTER_PATH": str(Path(sys.prefix) / "share" / "jupyter")})
    listing = lab.stdout + lab.stderr
    assert "@jupyter/nbgrader" in listing, listing
    disabled = listing.split("Disabled extensions:")[1].split()
    assert disabled == ["@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader"], listing


def test_course_init_writes_the_student_install_and_says_how_to_install_it(install, tmp_path, capsys):
    from course_tools.cli import main as course

    folder = tmp_path / "semester"
    assert course(["init", str(folder), "--course-id", "dlsys-test", "--exchange", str(tmp_path / "exchange")]) == 0
    (wheel,) = (folder / "student-install").glob("course_student-*.whl")
    out = capsys.readouterr().out
    assert f"pip install '{wheel}'" in out and "never the full bundle" in out
    assert wheel.name == install.wheel.name, "the same bundle must build the same version"
