"""The repository's set-up files say what the README and the docs promise."""
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


def test_nbgrader_config_grades_with_the_hidden_suites():
    # nbgrader only logs a config file that fails to load, and then grades in the kernel:
    # loading it here makes such a failure a test failure.
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    names = [p.__name__ for p in config.Autograde.autograde_preprocessors]
    assert names[0] == "HiddenSuiteGrader" and "Execute" not in names and "SaveAutoGrades" in names
    assert config.OverwriteCells.add_missing_cells is True


def test_the_course_command_is_installed_with_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["course"] == "course_tools.cli:main"
    assert "course demo" in (ROOT / "Makefile").read_text()


def test_late_work_costs_ten_percent_per_day():
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.AssignLatePenalties.plugin_class == "course_tools.late_penalty.PercentPerDay"
    assert config.PercentPerDay.percent_per_day == 10


def test_a_course_folder_from_init_grades_like_the_bundle(tmp_path):
    from course_tools.course_dir import init_course

    course = init_course(tmp_path / "semester", "dlsys-test", tmp_path / "exchange")
    config = course.config
    assert [p.__name__ for p in config.Autograde.autograde_preprocessors][0] == "HiddenSuiteGrader"
    assert config.CourseDirectory.course_id == "dlsys-test" and course.course_id == "dlsys-test"
    # The notebooks through links inside the course folder (formgrader links to them from there).
    assert config.CourseDirectory.source_directory == "source" and config.CourseDirectory.release_directory == "release"
    folder = tmp_path / "semester"
    assert (folder / "source").resolve() == ROOT / "source" and (folder / "release").resolve() == ROOT / "assignments"
    assert (folder / "source" / "04_conv_backward" / "04_conv_backward.ipynb").is_file()
    assert course.db_url == f"sqlite:///{tmp_path / 'semester'}/gradebook.db"
    assert course.exchange == tmp_path / "exchange" and (tmp_path / "exchange").is_dir()


def test_the_hub_gives_students_the_student_install_and_graders_the_bundle():
    page = (ROOT / "docs" / "hub.md").read_text()
    hub = page[page.index("## JupyterHub settings"):]
    students, graders = hub.index("Students' environment: the student install only"), hub.index("full bundle")
    assert students < hub.index("pip install course_student-") < graders < hub.index("pip install -e")
    assert "course student-package --out dist/student" in (ROOT / "Makefile").read_text()


def test_each_assignment_folder_imports_the_grader_through_one_module():
    """autograder/<id>/ (suite, lends, misconceptions) and conftest.py reach course_tools only
    through course_tools.grading.api, and the misconceptions live beside their suites."""
    import ast

    strays = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else ["." * node.level + (node.module or "")] if isinstance(node, ast.ImportFrom) else [])
            strays += [f"{path.relative_to(ROOT)}:{node.lineno} {m}" for m in modules
                       if m.startswith(".") or (m.startswith("course_tools") and m != "course_tools.grading.api")]
    assert not strays, strays
    assert not list((ROOT / "course_tools" / "grading" / "misconceptions").glob("*.py"))
    assert all((ROOT / "autograder" / a / "misconceptions.py").is_file()
               for a in ("01_forward_ops", "02_backward_ops", "03_ndarray", "04_conv_backward",
                         "05_pooling_backward", "06_gradient_checking", "07_experiments"))
