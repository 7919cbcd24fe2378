"""Laying out a hub deployment (see layout.py) with the owners and permissions it needs.

Who may read what, which is the point of it:
  - bundle/ and grader-env/: root-owned, group of the grader account, mode 0750: the grader
    service reads the hidden suites, solutions and sources there; students cannot even list it.
  - the course folder (gradebook, submissions, feedback): in the grader account's home, 0700.
  - student-env/ and etc/jupyter/: readable by all (every server runs from them).
  - exchange/: 01777 as nbgrader wants it (anyone may create their course folder in it; the
    sticky bit keeps a student from removing the course's); nbgrader itself makes inbound/
    write-only for students (2733) and names each submission with a random part.
  - every student's home: 0700 (accounts.py).
  - /etc/profile.d/course-hub-<id>.sh: a JupyterLab terminal is a login shell, whose /etc/profile
    resets PATH; the snippet puts the server's own environment (students': the student install's
    `course`) back in front, for the shells of this hub's servers only.

When the hub stops, ``release_ownership`` empties the exchange and gives everything else under
the deployment back to root, so that nothing is left owned by a uid or gid that userdel frees
(the next account given uid 1001 would otherwise own the grader's files); the next start does
the same before reusing anything.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

from ..paths import ROOT
from ..student_package import build_student_package
from . import envs
from .layout import HubLayout

# What the grader service needs of the bundle (never tests/, benchmarks/ or the repository's .git).
BUNDLE_PARTS = ("course_lib", "course_tools", "course_student", "autograder", "source", "assignments",
                "solutions", "nbgrader_config.py", "pyproject.toml", "README.md")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".hidden_suite_results", "gradebook.db", "*.egg-info")

GLOBAL_CONFIG = '''"""nbgrader's global configuration on this hub ({etc}/nbgrader_config.py, on every
server's JUPYTER_CONFIG_PATH; /etc/jupyter/nbgrader_config.py on a hub of its own): which course
students see in their Assignments tab, and where the exchange is."""
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{course_id}"
c.Exchange.root = "{exchange}"
'''

# The students' JupyterLab extension that makes nbgrader's "(view feedback)" open the feedback page
# (hub/labextensions/course-feedback-link/static/remoteEntry.js says why and how).
LAB_EXTENSIONS = ROOT / "hub" / "labextensions"

# JupyterLab settings of both environments: no news or update checks (there is no network to ask).
LAB_OVERRIDES = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}

GRADER_PROFILE = """
# The graders' environment first, also in a login shell (a terminal in the grader service):
# `course release`, `course grade` and nbgrader act on the course folder ($COURSE_DIR).
PATH="{env}/bin:$PATH"
"""

PROFILE_SNIPPET = """# The course {course_id}'s hub (written by course_tools/hub when it starts, removed when it stops).
# A JupyterLab terminal runs a login shell, and /etc/profile resets PATH: put the environment the
# server runs from (the students' with `course`, or the graders') back in front.
case "${{VIRTUAL_ENV:-}}" in
    {student_env}|{grader_env}) PATH="$VIRTUAL_ENV/bin:$PATH" ;;
esac
"""

GRADER_USER_CONFIG = '''"""The grader account's nbgrader configuration (~/.jupyter/nbgrader_config.py): the course
folder, whose own nbgrader_config.py loads the bundle's grading set-up (hidden suites, sandbox)."""
c = get_config()  # noqa: F821
load_subconfig("{course}/nbgrader_config.py")  # noqa: F821
'''


def _chown_tree_top(path: Path, gid: int, mode: int) -> None:
    os.chown(path, 0, gid)
    os.chmod(path, mode)


def as_user(user: str, args: list[str], env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run a command as ``user`` (root only), with that user's HOME."""
    entry = pwd.getpwnam(user)
    environment = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": entry.pw_dir, "USER": user, **(env or {})}
    return subprocess.run(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", "--",
                           *args], env=environment, cwd=cwd or entry.pw_dir, capture_output=True, text=True)


def copy_bundle(layout: HubLayout) -> None:
    shutil.rmtree(layout.bundle, ignore_errors=True)
    layout.bundle.mkdir(parents=True)
    copy_bundle_into(layout.bundle, ROOT)


def copy_bundle_into(dest: Path, checkout: Path) -> None:
    """Copy the BUNDLE_PARTS of ``checkout`` into the existing folder ``dest``."""
    for part in BUNDLE_PARTS:
        source = checkout / part
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=IGNORE)
        else:
            shutil.copy2(source, dest / part)


def build_environments(layout: HubLayout) -> None:
    """The bundle copy and both environments (reused when unchanged; see envs.py)."""
    layout.root.mkdir(parents=True, exist_ok=True)
    os.chmod(layout.root, 0o755)
    copy_bundle(layout)
    wheel = build_student_package(layout.root / "student-package")
    envs.student_env(layout, wheel)
    envs.grader_env(layout)
    for env in (layout.student_env, layout.grader_env):
        overrides = env / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
        overrides.parent.mkdir(parents=True, exist_ok=True)
        overrides.write_text(json.dumps(LAB_OVERRIDES, indent=2) + "\n")
    install_lab_extensions(layout.student_env)
    # The graders' service records who saves each manual grade (course report's "graded by"), and
    # formgrader's pages link to the service and typeset math (formgrader_pages.py).
    for name, module in (("course-grading-log", "course_tools.report.grading_log"),
                         ("course-formgrader-pages", "course_tools.hub.formgrader_pages")):
        _enable_server_extension(layout.grader_env, name, module)
    for folder in (layout.student_env, layout.root / "student-package"):
        os.chmod(folder, 0o755)


def install_lab_extensions(env: Path) -> None:
    """Put hub/labextensions/* into ``env``'s share/jupyter/labextensions/ (afresh at every start:
    they are a few plain files), readable by every server started from ``env``."""
    target = env / "share" / "jupyter" / "labextensions"
    for extension in sorted(p for p in LAB_EXTENSIONS.iterdir() if (p / "package.json").is_file()):
        shutil.rmtree(target / extension.name, ignore_errors=True)
        shutil.copytree(extension, target / extension.name)
        for path in [target / extension.name, *(target / extension.name).rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)


def _enable_server_extension(env: Path, name: str, module: str) -> None:
    """Turn on the Jupyter server extension ``module`` for every server started from ``env``."""
    extensions = env / "etc" / "jupyter" / "jupyter_server_config.d"
    extensions.mkdir(parents=True, exist_ok=True)
    (extensions / f"{name}.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {module: True}}}, indent=2) + "\n")


def lay_out(layout: HubLayout, students: list[tuple[str, str, str]] = (), sections: dict[str, str] | None = None) -> None:
    """Permissions, the exchange, nbgrader's global config and the course folder, with
    ``students`` (username, first name, last name) in its gradebook and ``sections``
    ({username: section}, the roster's) in its database; the grader account must exist
    (accounts.create)."""
    grader = pwd.getpwnam(layout.grader_account)
    for private in (layout.bundle, layout.grader_env):
        _chown_tree_top(private, grader.pw_gid, 0o750)
    shutil.rmtree(layout.exchange, ignore_errors=True)
    layout.exchange.mkdir(parents=True)
    os.chmod(layout.exchange, 0o1777)
    layout.etc_jupyter.mkdir(parents=True, exist_ok=True)
    os.chmod(layout.etc_jupyter.parent, 0o755)
    (layout.etc_jupyter / "nbgrader_config.py").write_text(
        GLOBAL_CONFIG.format(etc=layout.etc_jupyter, course_id=layout.course_id, exchange=layout.exchange))
    shutil.rmtree(layout.state, ignore_errors=True)
    layout.state.mkdir(mode=0o700, parents=True)
    layout.profile_snippet.write_text(PROFILE_SNIPPET.format(
        course_id=layout.course_id, student_env=layout.student_env, grader_env=layout.grader_env))
    os.chmod(layout.profile_snippet, 0o644)
    _make_course_folder(layout, students, sections or {})


def release_ownership(layout: HubLayout) -> list[Path]:
    """Empty the exchange (submissions, released copies, feedback: the accounts that own them are
    going) and give every other path under the deployment that is not root's to root:root, with
    bundle/ and grader-env/ closed to all but root (0700) until lay_out opens them to the grader
    account's group again; remove the login shells' PATH snippet. Returns the paths given back. Run at the stop, after the accounts'
    processes are gone and before userdel frees their uids, and at the start before anything is
    reused (a run killed before its clean-up leaves files to uids that no longer exist)."""
    layout.profile_snippet.unlink(missing_ok=True)
    shutil.rmtree(layout.exchange, ignore_errors=True)
    given_back = [path for path in _everything_under(layout.root) if _give_to_root(path)]
    for private in (layout.bundle, layout.grader_env):
        if private.is_dir():
            os.chmod(private, 0o700)  # until lay_out opens it to the grader account's group again
    return given_back


def _everything_under(root: Path) -> Iterator[Path]:
    """``root`` and every path below it, links included but never followed."""
    if not root.is_dir():
        return
    yield root
    for folder, subfolders, files in os.walk(root):
        for name in subfolders + files:
            yield Path(folder) / name


def _give_to_root(path: Path) -> bool:
    """chown root:root ``path`` (the link itself for a link) unless it is root's already."""
    st = path.lstat()
    if st.st_uid == 0 and st.st_gid == 0:
        return False
    os.lchown(path, 0, 0)
    return True


def _make_course_folder(layout: HubLayout, students: list[tuple[str, str, str]], sections: dict[str, str]) -> None:
    """`course init --roster` for the grader account (without building a student install: the hub
    has one): the students' names into the gradebook and their sections (`course extend
    --section`) into the course's database. They come as JSON: the grader account cannot read the
    roster's checkout."""
    code = ("import json, sys; from course_tools.course_dir import init_course; "
            "from course_tools.sections import record; "
            "record(init_course(sys.argv[1], sys.argv[2], sys.argv[3], students=json.loads(sys.argv[4])), "
            "json.loads(sys.argv[5]))")
    made = as_user(layout.grader_account, [str(layout.grader_env / "bin" / "python"), "-c", code,
                                           str(layout.course_folder), layout.course_id, str(layout.exchange),
                                           json.dumps(list(students)), json.dumps(sections)])
    if made.returncode != 0:
        raise RuntimeError(f"making the course folder {layout.course_folder} failed: {made.stderr.strip()}")
    jupyter = layout.grader_home / ".jupyter"
    jupyter.mkdir(exist_ok=True)
    (jupyter / "nbgrader_config.py").write_text(GRADER_USER_CONFIG.format(course=layout.course_folder))
    with open(layout.grader_home / ".profile", "a") as profile:
        profile.write(GRADER_PROFILE.format(env=layout.grader_env))
    grader = pwd.getpwnam(layout.grader_account)
    for path in (jupyter, jupyter / "nbgrader_config.py", layout.grader_home / ".profile"):
        os.chown(path, grader.pw_uid, grader.pw_gid)


