"""A whole hub from nothing to cleaned up: environments, accounts, deployment, JupyterHub.

    with running_hub(layout, roster_path) as hub:
        ...  # hub.url, hub.password; the accounts of the roster and grader-<course id> exist

On leaving (also on an error or Ctrl-C) the hub and everything it started are stopped and the
accounts made for it removed, homes included. `make hub` and tests/test_hub.py use this.
"""
from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path
from typing import Callable, Iterator

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


@contextlib.contextmanager
def running_hub(layout: HubLayout, roster_path: Path = rosters.DEFAULT,
                say: Callable[[str], None] = lambda text: None) -> Iterator[Hub]:
    require_programs()
    roster = rosters.load(roster_path)
    lock = open(LOCK, "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise HubError(f"another course hub is running on this machine ({LOCK} is locked): stop it first") from None
    say(f"building the environments in {layout.root} (a minute or two the first time) ...")
    deploy.build_environments(layout)
    names = [layout.grader_account, *roster.names()]
    hub = Hub(layout, Path(roster_path))
    try:
        say(f"creating the accounts {', '.join(names)} ...")
        accounts.create(names)
        deploy.lay_out(layout)
        say(f"starting JupyterHub on {hub.url} ...")
        hub.start()
        yield hub
    finally:
        try:
            hub.stop()
        finally:
            removed = accounts.remove(names)
            lock.close()
        say(f"stopped the hub; removed the accounts {', '.join(removed) or '(none)'}")
