"""`make hub-update`: a fixed bundle into a running hub, without losing the semester.

    sudo .venv/bin/python -m course_tools.hub.update [--root /srv/course-hub] [--course-id dlsys]

A hub's start (`make hub`) lays everything out afresh: it empties the exchange and the hub's state.
So a fix made in the middle of a semester (a typo in a released notebook, a hidden check, the
grading service) cannot go in by a restart. This command, run as root from the checkout that holds
the fix (after `course build ID` there), puts the fix into the running deployment:

  1. the bundle copy (bundle/), swapped in whole, with the grader account's group and mode 0750;
     the graders' environment has it installed editable, so it needs nothing more;
  2. the students' install (student-env/), only when the student package changed (`course check`,
     fetch, submit, the stubbed course_lib);
  3. the two hub-managed services of the course (the course's server with formgrader, and the
     grading service) are stopped; JupyterHub starts them again (within its 30 s poll), and they
     load the new code. A grading in progress is put back in the queue and done again.

Then the instructor releases the new version in the course's terminal (`course release ID`),
which shows what changes for students who fetched the earlier one (docs/release-versions.md).
It refuses, changing nothing, when the fix changes the environments' dependencies
(pyproject.toml): those need the environments rebuilt, which a running hub cannot do.
"""
from __future__ import annotations

import argparse
import http.client
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Callable

from ..paths import ROOT
from ..student_package import build_student_package
from . import accounts, deploy, roster as rosters
from .layout import DEFAULT_COURSE_ID, DEFAULT_ROOT, HubLayout
from .session import refuse_if_students_could_read_hidden_material

RESTART_SECONDS = 120  # JupyterHub polls its services every 30 s; a service's start takes seconds more


class UpdateError(RuntimeError):
    """The update cannot go ahead; the message says why, and nothing was changed."""


def _require(layout: HubLayout) -> pwd.struct_passwd:
    if os.geteuid() != 0:
        raise UpdateError("the hub's files are root's and the grader account's: run it as root (sudo)")
    for needed in (layout.bundle, layout.grader_env, layout.student_env):
        if not needed.is_dir():
            raise UpdateError(f"no hub deployment at {layout.root} ({needed} is missing): start one with `make hub`")
    try:
        return pwd.getpwnam(layout.grader_account)
    except KeyError:
        raise UpdateError(f"the account {layout.grader_account} does not exist: is the hub running?") from None


def _refuse_changed_dependencies(layout: HubLayout, source: Path) -> None:
    if (source / "pyproject.toml").read_bytes() != (layout.bundle / "pyproject.toml").read_bytes():
        raise UpdateError(f"{source / 'pyproject.toml'} differs from the hub's copy: the environments' dependencies "
                          "may have changed, and a running hub's environments cannot be rebuilt. Nothing was changed.")


def swap_in_bundle(layout: HubLayout, grader_gid: int, source: Path = ROOT) -> None:
    """Copy ``source``'s bundle parts beside the hub's bundle/, close it to all but the grader
    account's group (0750), then put it in bundle/'s place. The copy is made first and the swap is
    two renames, so a grading never reads a half-copied bundle (one that starts between the two
    renames finds no bundle and is a grading error, which the service retries)."""
    staging = Path(tempfile.mkdtemp(prefix=".bundle-update-", dir=layout.root))  # 0700, root's
    try:
        deploy.copy_bundle_into(staging, source)
        os.chown(staging, 0, grader_gid)
        os.chmod(staging, 0o750)
        old = layout.root / f".bundle-old-{os.getpid()}"
        os.rename(layout.bundle, old)
        os.rename(staging, layout.bundle)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(old)


def _installed_version(env: Path, package: str) -> str | None:
    found = subprocess.run([str(env / "bin" / "python"), "-c",
                            f"import importlib.metadata as m; print(m.version({package!r}))"],
                           capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def update_student_install(layout: HubLayout, say: Callable[[str], None]) -> bool:
    """Install the rebuilt student package into student-env/ when its version (which carries a
    hash of its files) differs from the installed one; returns whether it did."""
    wheel = build_student_package(layout.root / "student-package")
    version = wheel.name.split("-")[1]
    if _installed_version(layout.student_env, "course_student") == version:
        say("the students' install is unchanged")
        return False
    # --no-deps: the dependencies are the installed ones (pyproject.toml is unchanged, checked above).
    done = subprocess.run([str(layout.student_env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps",
                           str(wheel)], capture_output=True, text=True)
    if done.returncode != 0:
        raise UpdateError(f"installing {wheel.name} into {layout.student_env} failed:\n{done.stderr.strip()}")
    for folder in (layout.student_env, layout.root / "student-package"):
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                os.chmod(path, path.stat().st_mode | (0o755 if path.is_dir() else 0o644))
    say(f"installed the students' package {version} (servers started from now on use it)")
    return True


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


def _command(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")


def services(layout: HubLayout, grader_uid: int) -> dict[int, str]:
    """pid -> command line of each process the hub runs as the grader account: the course's
    managed services (their parent is the jupyterhub process)."""
    found = {}
    for pid in accounts.processes_of(grader_uid):
        try:
            parent = _command(_parent(pid))   # `python -m jupyterhub -f ...` or `jupyterhub -f ...`
            if any(Path(part).name == "jupyterhub" for part in parent[:3]):
                found[pid] = " ".join(_command(pid)).strip()
        except (OSError, ValueError, IndexError):   # the process ended meanwhile
            continue
    return found


def _answers(pid: int, course_id: str) -> bool:
    """Whether the service ``pid`` is ready. The course's server (the service named after the
    course, the one with a URL in hub/jupyterhub_config.py) is ready when it answers HTTP at its
    JUPYTERHUB_SERVICE_URL, whatever the status (no redirect is followed); the grading service,
    which serves nothing (though JupyterHub gives it that variable too), once it runs."""
    try:
        environment = dict(item.split("=", 1) for item in
                           Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0") if "=" in item)
    except OSError:
        return False
    url = urllib.parse.urlsplit(environment.get("JUPYTERHUB_SERVICE_URL", ""))
    if environment.get("JUPYTERHUB_SERVICE_NAME") != course_id or not url.hostname:
        return True
    connection = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=5)
    try:
        connection.request("GET", environment.get("JUPYTERHUB_SERVICE_PREFIX", "/"))
        connection.getresponse().read()
    except OSError:
        return False
    finally:
        connection.close()
    return True


def restart_services(layout: HubLayout, grader_uid: int, say: Callable[[str], None],
                     wait: float = RESTART_SECONDS) -> dict[int, str]:
    """SIGTERM the course's services and wait until JupyterHub has started as many again and those
    with a URL answer there; returns the new ones. UpdateError when none runs, or when they are not back within ``wait`` seconds."""
    running = services(layout, grader_uid)
    if not running:
        raise UpdateError(f"no service of {layout.grader_account} runs under a jupyterhub process: is the hub running?")
    for pid, command in running.items():
        say(f"stopping {command} (pid {pid}); JupyterHub starts it again")
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait
    fresh: dict[int, str] = {}
    ready: dict[int, bool] = {}
    while time.monotonic() < deadline:
        fresh = {pid: command for pid, command in services(layout, grader_uid).items() if pid not in running}
        ready = {pid: _answers(pid, layout.course_id) for pid in fresh}
        if len(fresh) >= len(running) and all(ready.values()):
            return fresh
        time.sleep(1)
    found = "; ".join(f"{command} (pid {pid}, {'ready' if ready.get(pid) else 'not answering'})"
                      for pid, command in fresh.items()) or "none"
    raise UpdateError(f"JupyterHub did not start the course's {len(running)} services again within {wait:.0f} s "
                      f"(started again: {found}): see {layout.log}")


def update(layout: HubLayout, roster_path: Path = rosters.DEFAULT, source: Path = ROOT,
           say: Callable[[str], None] = lambda text: None) -> dict[int, str]:
    """The three steps of the module's docstring; returns the restarted services (pid -> command)."""
    grader = _require(layout)
    _refuse_changed_dependencies(layout, source)
    refuse_if_students_could_read_hidden_material(layout, rosters.load(roster_path).students)
    say(f"copying the bundle from {source} into {layout.bundle} ...")
    swap_in_bundle(layout, grader.pw_gid, source)
    update_student_install(layout, say)
    return restart_services(layout, grader.pw_uid, say)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help=f"the deployment (default {DEFAULT_ROOT})")
    parser.add_argument("--course-id", default=DEFAULT_COURSE_ID)
    parser.add_argument("--roster", type=Path, default=rosters.DEFAULT)
    args = parser.parse_args(argv)
    layout = HubLayout(args.root.resolve(), args.course_id)
    try:
        restarted = update(layout, args.roster, say=lambda text: print(text, flush=True))
    except (UpdateError, RuntimeError, rosters.RosterError) as err:
        print(f"course hub update: {err}", file=sys.stderr)
        return 1
    print(f"updated the hub at {layout.root}; the course's services run again (pids "
          f"{', '.join(map(str, sorted(restarted)))}). Now release the new version in the course's terminal: "
          "course release ID", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
