"""A newcomer's first commands: `make demo` / `make test` say at once what the machine lacks,
and the bundle's own commands print no third-party noise."""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from course_tools import prerequisites

ROOT = Path(__file__).resolve().parents[1]


def _path_without_bwrap(tmp_path: Path) -> str:
    """This PATH with bwrap hidden, and apt-get too (so that, as root, nothing gets installed)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            if entry.name not in ("bwrap", "apt-get") and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry.path)
    return str(folder)


@pytest.mark.parametrize("target", ["demo", "test"])
def test_make_stops_at_once_naming_a_missing_bubblewrap(target, tmp_path):
    env = {**os.environ, "PATH": _path_without_bwrap(tmp_path)}
    env.pop("COURSE_SKIP_PREREQUISITES", None)
    started = time.monotonic()
    run = subprocess.run(["make", "--no-print-directory", target, "PYTHON=python3"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - started
    said = run.stdout + run.stderr
    assert run.returncode != 0 and seconds < 20, (seconds, said)
    lines = [line for line in said.splitlines() if "bubblewrap" in line]
    assert len(lines) == 1 and "apt-get install -y bubblewrap" in lines[0], said
    assert "pip install" not in said and "pytest" not in said.replace("make test", "")  # nothing long ran


def test_the_prerequisites_name_the_packages_ci_installs():
    """.ci/run installs what `make test` checks for: the two lists of Debian packages agree."""
    ci = (ROOT / ".ci" / "run").read_text()
    ci_packages = {p for line in re.findall(r"apt_install ([^|&;\n]+)", ci) for p in line.split()
                   if re.fullmatch(r"[a-z0-9][a-z0-9.+-]*", p)}
    checked = {p for piece in prerequisites.pieces("test") for p in piece.apt}
    if os.geteuid() != 0:  # the hub test's pieces are checked for root only
        checked |= {p for piece in (prerequisites.CHROMIUM, prerequisites.NPM, prerequisites.SYSTEM_VENV,
                                         prerequisites.SLURM)
                    for p in piece.apt}
    assert ci_packages == checked


def test_executing_a_notebook_prints_no_kernel_warning(tmp_path, capfd):
    """The build (and `course check`) start kernels; ipykernel's start-up warning about local TCP
    went to the terminal once per notebook."""
    from course_tools import build

    path = tmp_path / "one.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), str(path))
    build.execute_notebook(path, tmp_path, timeout=60)
    out, err = capfd.readouterr()
    assert "without encryption" not in out + err and "WARNING" not in out + err, out + err


def test_building_the_bundle_warns_of_nothing_deprecated(tmp_path):
    """pip install -e . (make venv) builds the project with setuptools: no deprecation banners."""
    pytest.importorskip("setuptools")
    project = tmp_path / "project"  # the metadata is what warns: the packages themselves are left out
    for name in ("course_lib", "course_tools", "course_student"):
        (project / name).mkdir(parents=True)
        (project / name / "__init__.py").write_text("")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, project / name)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                          str(tmp_path / "wheel"), str(project)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "deprecated" not in (run.stdout + run.stderr).lower(), run.stdout + run.stderr
