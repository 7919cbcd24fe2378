"""A whole hub from nothing to cleaned up: environments, accounts, deployment, JupyterHub.

    with running_hub(layout, roster_path) as hub:
        ...  # hub.url, hub.password; the accounts of the roster and grader-<course id> exist

It refuses to start while a student could read hidden material (the checkout it runs from, its
environment, the deployment's private parts, the course folder): once before building anything,
and again once the accounts exist (their groups count); hub/jupyterhub_config.py checks the same
at the hub's own start. On leaving (also on an error or Ctrl-C) the hub and everything it started
are stopped, the deployment given back to root and the accounts made for it removed, homes
included. `make hub` and tests/test_hub.py use this.
"""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Callable, Iterator

from .. import access
from . import accounts, deploy, roster as rosters
from .layout import HubLayout
from .server import Hub, HubError, require_programs

LOCK = Path("/run/course-hub.lock")  # one demo hub at a time: they share the accounts' names


def release(layout: HubLayout, assignment: str) -> str:
    """`course release ASSIGNMENT` as the grader account, in the course folder (what an
    instructor types in the grader service's terminal)."""
    done = deploy.as_user(layout.grader_account, [str(layout.grader_env / "bin" / "course"), "release", assignment],
                          env={"COURSE_DIR": str(layout.course_folder), "JUPYTER_CONFIG_PATH": str(layout.etc_jupyter),
                               "PATH": f"{layout.grader_env / 'bin'}:/usr/bin:/bin"})
    if done.returncode != 0:
        raise RuntimeError(f"course release {assignment} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def refuse_if_students_could_read_hidden_material(layout: HubLayout, students: list[str]) -> None:
    """HubError naming each path of ``layout.hidden_material()`` that one of ``students`` (an
    account not made yet: through the other bits) could read or enter, with its chmod."""
    found = access.exposures(layout.hidden_material(), [access.account(name) for name in students])
    if found:
        raise HubError(access.refusal(found, "the hub does not start"))


@contextlib.contextmanager
def running_hub(layout: HubLayout, roster_path: Path = rosters.DEFAULT,
                say: Callable[[str], None] = lambda text: None) -> Iterator[Hub]:
    require_programs()
    roster = rosters.load(roster_path)
    refuse_if_students_could_read_hidden_material(layout, roster.students)
    with open(LOCK, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HubError(f"another course hub is running on this machine ({LOCK} is locked): stop it first") from None
        given_back = deploy.release_ownership(layout)
        if given_back:
            say(f"gave {len(given_back)} paths under {layout.root} left by an earlier run back to root")
        say(f"building the environments in {layout.root} (a minute or two the first time) ...")
        deploy.build_environments(layout)
        names = [layout.grader_account, *roster.names()]
        hub = Hub(layout, Path(roster_path))
        try:
            say(f"creating the accounts {', '.join(names)} ...")
            accounts.create(names)
            deploy.lay_out(layout, roster.student_names(), roster.sections())
            refuse_if_students_could_read_hidden_material(layout, roster.students)
            say(f"starting JupyterHub on {hub.url} ...")
            hub.start()
            yield hub
        finally:
            try:
                hub.stop()
                for name in names:  # nothing of theirs may still be writing when their files change owner
                    accounts.stop_processes(name)
                deploy.release_ownership(layout)
            finally:
                removed = accounts.remove(names)
            say(f"stopped the hub; removed the accounts {', '.join(removed) or '(none)'}")
