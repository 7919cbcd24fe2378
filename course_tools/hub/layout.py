"""Where a hub deployment keeps things, for one course (shared with hub/jupyterhub_config.py,
which derives the same paths from COURSE_HUB_ROOT and COURSE_ID).

    <root>/student-env/   the students' Python: the student install and jupyterhub-singleuser, nothing else
    <root>/grader-env/    the grader service's Python: the full bundle (editable, from bundle/), PyTorch
    <root>/bundle/        a copy of the course bundle, readable by the grader account only
    <root>/exchange/      nbgrader's exchange (world-writable, sticky)
    <root>/etc/jupyter/   nbgrader's global config (course id, exchange), on every server's JUPYTER_CONFIG_PATH
    <root>/state/         the hub's database, cookie secret, proxy pid and log (root only)
    ~grader-<id>/<id>/    the course folder (gradebook, submissions, feedback), the grader account's
    /etc/profile.d/course-hub-<id>.sh   puts the server's environment back on a login shell's PATH

``hidden_material`` lists what students must never read, the checkout the hub is started from
included (course_tools/access.py checks it).
"""
from __future__ import annotations

import os
import pwd
import sys
from dataclasses import dataclass
from pathlib import Path

from ..paths import ROOT

DEFAULT_ROOT = Path("/srv/course-hub")
DEFAULT_COURSE_ID = "dlsys"
# The checkout the hub's tools run from (as root): the full bundle with its history.
CHECKOUT = ROOT
PROFILE_D = Path("/etc/profile.d")


@dataclass(frozen=True)
class HubLayout:
    root: Path = DEFAULT_ROOT
    course_id: str = DEFAULT_COURSE_ID

    student_env = property(lambda self: self.root / "student-env")
    grader_env = property(lambda self: self.root / "grader-env")
    bundle = property(lambda self: self.root / "bundle")
    exchange = property(lambda self: self.root / "exchange")
    etc_jupyter = property(lambda self: self.root / "etc" / "jupyter")
    state = property(lambda self: self.root / "state")
    log = property(lambda self: self.root / "state" / "jupyterhub.log")

    @property
    def grader_account(self) -> str:
        """nbgrader's shared grading account for a course with several graders."""
        return f"grader-{self.course_id}"

    @property
    def formgrade_group(self) -> str:
        """The JupyterHub group whose members reach the grader service (name fixed by nbgrader)."""
        return f"formgrade-{self.course_id}"

    @property
    def grader_home(self) -> Path:
        try:
            return Path(pwd.getpwnam(self.grader_account).pw_dir)
        except KeyError:
            return Path("/home") / self.grader_account

    @property
    def course_folder(self) -> Path:
        return self.grader_home / self.course_id

    @property
    def profile_snippet(self) -> Path:
        """The login shells' PATH fix for this course's servers (deploy.py writes it)."""
        return PROFILE_D / f"course-hub-{self.course_id}.sh"

    def hidden_material(self) -> dict[Path, str]:
        """Every path that holds what no student may read (path: what it holds), whether or not
        it exists yet: the checkout and the Python environment the hub runs from, any course
        folder made in that checkout, the deployment's private parts, the course folder."""
        paths = {CHECKOUT: "the course bundle the hub is started from: autograder/, solutions/, source/, .git",
                 CHECKOUT / "demo-course": "`course demo`'s course folder and gradebook"}
        if sys.prefix != sys.base_prefix:  # a virtual environment: course_tools, PyTorch
            paths[Path(sys.prefix)] = "the Python environment the hub runs from"
        paths.update({
            self.bundle: "the deployment's copy of the bundle (hidden suites, solutions, sources)",
            self.grader_env: "the graders' environment (the bundle, editable)",
            self.state: "the hub's database and cookie secret",
            self.course_folder: "the course folder (submissions, feedback)",
            self.course_folder / "gradebook.db": "the gradebook",
        })
        return paths

    def env(self) -> dict[str, str]:
        """What hub/jupyterhub_config.py reads to find this deployment."""
        return {"COURSE_HUB_ROOT": str(self.root), "COURSE_ID": self.course_id}


def world_reachable(path: Path) -> bool:
    """Whether any user can reach ``path`` (every folder above it has the x bit for others)."""
    path = Path(os.path.realpath(path))
    return all(parent.stat().st_mode & 0o001 for parent in path.parents)
