"""An nbgrader course folder, as the `course` command sees it.

A course folder holds nbgrader_config.py, the gradebook (SQLite by default), nbgrader's
working folders (submitted/, autograded/, feedback/) and, made by `course init`, the student
install for the students' environment (student-install/, see student_package.py). `course init`
makes it private (0700: submissions, feedback and the gradebook are nobody else's business).
It is either this repository itself
(its nbgrader_config.py) or a folder made by `course init`, whose configuration loads the
repository's grading set-up and takes the notebooks from the repository's source/ and
assignments/ (through the links source/ and release/ in the course folder, where nbgrader looks
for them), so a semester's submissions never mix with the course's sources.

Which folder: --course DIR, else $COURSE_DIR, else the nearest folder from the working
directory upwards that has an nbgrader_config.py, else this repository.
"""
from __future__ import annotations

import functools
import os
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

# Shared with the student commands (course_student); the instructor commands import them from here.
from course_student.errors import CourseError, check_assignment  # noqa: F401
from course_student.nbgrader_run import error_lines, run_nbgrader  # noqa: F401

from . import access
from .gradebook_tables import create_racing_others
from .paths import ROOT

CONFIG = "nbgrader_config.py"
DEFAULT_EXCHANGE = "/srv/nbgrader/exchange"
# nbgrader's own folder names, inside a course folder: links to the bundle's source/ and assignments/.
SOURCE_LINK, RELEASE_LINK = "source", "release"


INIT_TEMPLATE = '''"""nbgrader configuration of the course folder {root}, made by `course init`.

Everything about grading (hidden suites, sandbox, late policy) comes from the course bundle's
own nbgrader_config.py, loaded first; the lines after it are this course's. Edit them freely.
"""
c = get_config()  # noqa: F821
load_subconfig(r"{bundle}/nbgrader_config.py")  # noqa: F821

c.CourseDirectory.root = r"{root}"
c.CourseDirectory.course_id = "{course_id}"
# The notebooks come from the course bundle: source/ (with solutions) and release/ (as released)
# are links to its source/ and assignments/, inside this folder where formgrader's links expect them.
c.CourseDirectory.source_directory = "{source}"
c.CourseDirectory.release_directory = "{release}"
# SQLite needs nothing running; for several graders at once use PostgreSQL, e.g.
# "postgresql+psycopg2://nbgrader@dbhost/dlsys" (pip install psycopg2-binary).
c.CourseDirectory.db_url = "{db_url}"
c.Exchange.root = r"{exchange}"
# Seconds the hidden suites may take per notebook in all, and the late policy (percent per started day).
c.HiddenSuiteGrader.timeout = 0  # 0: what the time budgets allow (loading plus COURSE_GRADER_TASK_SECONDS per task)
c.PercentPerDay.percent_per_day = 10
# Feedback before the deadline from `course serve` (course_tools/service/policy.py): what students
# see (checks: each task passed or failed and why, no points | scores | none), graded attempts per
# student and UTC day, submissions one student may have waiting to be graded, and per assignment
# overrides, e.g. {{"07_experiments": {{"feedback": "none"}}}}.
c.GradingService.feedback = "checks"
c.GradingService.attempts_per_day = 5
c.GradingService.max_queued = 3
c.GradingService.assignments = {{}}
'''


@dataclass
class Course:
    root: Path

    # ------------------------------------------------------------------ configuration
    @functools.cached_property
    def config(self):
        from traitlets.config.loader import PyFileConfigLoader

        try:
            return PyFileConfigLoader(CONFIG, path=str(self.root)).load_config()
        except Exception as err:  # noqa: BLE001 - nbgrader itself would ignore a broken file silently
            raise CourseError(f"{self.root / CONFIG} cannot be loaded: {type(err).__name__}: {err}") from err

    def _setting(self, section: str, name: str, default):
        value = self.config.get(section, {}).get(name)
        return default if value is None or type(value).__name__ == "LazyConfigValue" else value

    @property
    def course_id(self) -> str:
        return self._setting("CourseDirectory", "course_id", "")

    @property
    def exchange(self) -> Path:
        return Path(self._setting("Exchange", "root", DEFAULT_EXCHANGE))

    @property
    def db_url(self) -> str:
        return self._setting("CourseDirectory", "db_url", f"sqlite:///{self.root}/gradebook.db")

    def folder(self, step: str) -> Path:
        """nbgrader's submitted/, autograded/ or feedback/ folder of this course."""
        return self.root / self._setting("CourseDirectory", f"{step}_directory", step)

    # ------------------------------------------------------------------ nbgrader
    def nbgrader_or_fail(self, *args: str, what: str) -> str:
        """Run an nbgrader command in this course folder (its configuration applies)."""
        self.create_gradebook()
        return run_nbgrader(list(args), self.root, what)

    def api(self, unsandboxed: bool = False, grade_on: str = "own", feedback_checked: bool = False):
        """nbgrader's Python API on this course (what formgrader uses), for per-student steps;
        ``unsandboxed``: its HiddenSuiteGrader grades without bubblewrap (course grade --unsandboxed);
        ``grade_on``: "latest" grades every submission on the latest release version (--version latest);
        ``feedback_checked``: `course feedback` made the extension check (exchange_feedback.py)."""
        import copy

        from nbgrader.apps.api import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory

        warnings.filterwarnings("ignore", module=r"nbgrader\..*")  # SQLAlchemy noise from nbgrader's own queries
        _alembic_on_path()
        self.create_gradebook()
        config = self.config
        if unsandboxed or grade_on != "own" or feedback_checked:
            config = copy.deepcopy(config)
        if feedback_checked:
            config.CourseReleaseFeedback.checked = True
        if unsandboxed:
            config.HiddenSuiteGrader.unsandboxed = True
        if grade_on != "own":
            config.HiddenSuiteGrader.grade_on = grade_on
        return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)

    def gradebook_exists(self) -> bool:
        """Whether the gradebook has been created; never creates one (opening nbgrader's Gradebook
        on an empty database would, running alembic)."""
        url = self.db_url
        if url.startswith("sqlite:///"):
            return Path(url[len("sqlite:///"):]).exists()
        from sqlalchemy import create_engine, inspect

        engine = create_engine(url)
        try:
            return bool(inspect(engine).get_table_names())
        finally:
            engine.dispose()

    def gradebook(self, must_exist: bool = True):
        from nbgrader.api import Gradebook

        _alembic_on_path()
        url = self.db_url
        # On a server database (PostgreSQL) nbgrader creates the tables when it first opens it.
        if must_exist and url.startswith("sqlite:///") and not self.gradebook_exists():
            raise CourseError(f"no gradebook at {url[len('sqlite:///'):]}: release an assignment first "
                              f"(course release <id>), or pass --course with the course folder")
        warnings.filterwarnings("ignore", module=r"nbgrader\..*")
        return create_racing_others(lambda: Gradebook(url, course_id=self.course_id or "default_course"))

    def create_gradebook(self) -> None:
        """Make the gradebook's tables now if they are missing, so that the nbgrader process about
        to start finds them there instead of racing a grading service to create them."""
        self.gradebook(must_exist=False).close()

    def submitted_students(self, assignment: str) -> list[str]:
        folder = self.folder("submitted")
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if (p / assignment).is_dir())


def find_course(explicit: str | Path | None = None) -> Course:
    if explicit is None and os.environ.get("COURSE_DIR"):
        explicit = os.environ["COURSE_DIR"]
    if explicit is not None:
        root = Path(explicit).expanduser().resolve()
        if not (root / CONFIG).exists():
            raise CourseError(f"{root} is not a course folder (no {CONFIG} there): make one with `course init {root}`")
        return Course(root)
    here = Path.cwd().resolve()
    for folder in [here, *here.parents]:
        if (folder / CONFIG).exists():
            return Course(folder)
    return Course(ROOT)


def init_course(root: Path, course_id: str, exchange: Path | None = None, db_url: str | None = None,
                students: list[tuple[str, str, str]] = ()) -> Course:
    """Make a course folder at ``root`` (see the module docstring) and the exchange if missing;
    ``students`` (username, first name, last name) go into the gradebook, so that formgrader
    shows graders their names (nbgrader would otherwise add each at collection, nameless)."""
    root = Path(root).expanduser().resolve()
    if (root / CONFIG).exists():
        raise CourseError(f"{root / CONFIG} exists already: edit it, or choose another folder")
    if not course_id or any(ch in course_id for ch in "+*/ "):
        raise CourseError(f"course id {course_id!r} must be a non-empty word without '+', '*', '/' or spaces")
    exchange = Path(exchange or DEFAULT_EXCHANGE).expanduser().resolve()
    _private_folder(root)
    _link_bundle_notebooks(root)
    (root / CONFIG).write_text(INIT_TEMPLATE.format(root=root, bundle=ROOT, course_id=course_id, exchange=exchange,
                                                    source=SOURCE_LINK, release=RELEASE_LINK,
                                                    db_url=db_url or f"sqlite:///{root}/gradebook.db"))
    ensure_exchange(exchange)
    course = Course(root)
    if students:
        with course.gradebook(must_exist=False) as gradebook:
            for username, first_name, last_name in students:
                gradebook.update_or_create_student(username, first_name=first_name or None,
                                                   last_name=last_name or None)
    return course


def _link_bundle_notebooks(root: Path) -> None:
    """source/ and release/ in the course folder, links to the bundle's source/ and assignments/.
    nbgrader's formgrader links an assignment's name and Preview to these folders relative to the
    course folder: with the bundle's own paths they pointed outside the server's root (a 404 on a
    hub, where the server's root is the grader account's home)."""
    for name, target in ((SOURCE_LINK, ROOT / "source"), (RELEASE_LINK, ROOT / "assignments")):
        link = root / name
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.exists() or link.is_symlink():
            raise CourseError(f"{link} exists and is not a link to {target}: move it away, then run course init again")
        link.symlink_to(target, target_is_directory=True)


def _private_folder(root: Path) -> None:
    """The course folder, closed to every other account from the start: made with mode 0700 (the
    folders above it as the umask says), or, when it exists already, refused while any other
    account could read or enter it (the message says the chmod that closes it)."""
    if root.exists():
        found = access.exposures({root: "the course folder"}, [access.OTHERS])
        if found:
            raise CourseError(access.refusal(found, "course init makes no course folder here"))
        return
    root.parent.mkdir(parents=True, exist_ok=True)
    root.mkdir(mode=0o700)
    root.chmod(0o700)  # mkdir's mode passes through the umask; this is the mode meant


def bundle_exposures() -> list[access.Exposure]:
    """This bundle (hidden suites, solutions, sources, history) where every other account on
    the machine can read it: harmless on an instructor's own machine, a leak on a shared one."""
    return access.exposures({ROOT: "the course bundle: autograder/, solutions/, source/, .git"}, [access.OTHERS])


def ensure_exchange(exchange: Path) -> None:
    """nbgrader's exchange must exist, and everyone may add their entries to it (students drop
    submissions there) but never rename or remove another's: mode 01777, as a hub deploys it
    (hub/deploy.py) and exchange_folders.py checks it. Without the sticky bit, any student could
    move the course's folder aside and put their own in its place."""
    try:
        exchange.mkdir(parents=True, exist_ok=True)
        info = exchange.stat()
        # Only when needed, and only what we own (a hub's root-owned exchange is 01777 already).
        if info.st_mode & 0o7777 != 0o1777 and info.st_uid == os.geteuid():
            exchange.chmod(0o1777)
    except OSError as err:
        raise CourseError(f"cannot create the exchange {exchange} ({err.strerror}); as an administrator run: "
                          f"sudo mkdir -p {exchange} && sudo chmod 1777 {exchange}") from None


def _alembic_on_path() -> None:
    """nbgrader opens a non-SQLite gradebook by running the `alembic` command found on PATH; with
    `.venv/bin/course` called without activating the environment it is not there, so put the
    interpreter's own scripts folder (where pip installed alembic) in front."""
    if shutil.which("alembic") is None:
        scripts = os.path.dirname(sys.executable)
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")
