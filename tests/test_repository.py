"""The repository's set-up files say what the README promises."""
import pathlib
import tomllib

from traitlets.config.loader import PyFileConfigLoader

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_nbgrader_config_loads_and_releases_into_assignments():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.CourseDirectory.release_directory == "assignments"
    assert config.CourseDirectory.source_directory == "source"
    assert config.CourseDirectory.db_url.startswith("sqlite:///")


def test_pyproject_declares_the_real_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("<")[0].split("=")[0].strip() for d in project["dependencies"]}
    assert {"numpy", "nbgrader", "jupyterlab", "notebook"} <= names
    extras = project["optional-dependencies"]
    assert any(d.startswith("cupy-cuda12x") for d in extras["gpu"])
    assert any(d.startswith("cupy-cuda13x") for d in extras["gpu-cuda13"])
    assert any(d.startswith("torch") for d in extras["test"])  # an oracle, never a student dependency
    assert not any(d.startswith("torch") for d in project["dependencies"])


def test_ci_runs_make_test():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
