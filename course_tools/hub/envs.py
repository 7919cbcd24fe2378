"""The two Python environments of a hub: the students' and the grader service's.

    students  a fresh venv with the student install (`course student-package`, installed from its
              wheel with its dependencies from the registry) and JupyterHub's single-user server,
              nothing of the bundle: no autograder/, solutions/, source/, course_tools, PyTorch
    graders   a fresh venv with the full bundle (editable, from the deployment's private copy),
              PyTorch (the hidden suites' reference) and the single-user server

Both are built from a Python every account can run (not one under /root, mode 0700 here): the
system's python3.X of the same minor version as this one, or COURSE_HUB_PYTHON. Building takes a
minute or two (mostly pip unpacking JupyterLab and PyTorch); an environment is reused while its
key (what went into it) is unchanged, so later runs start in seconds.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from .layout import HubLayout, world_reachable

STAMP = ".course-hub-key"


class EnvError(RuntimeError):
    """An environment cannot be built; the message says what is missing."""


def base_python() -> Path:
    """A Python interpreter that every account (students, the grader account) can run."""
    wanted = os.environ.get("COURSE_HUB_PYTHON") or f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    python = Path(wanted)
    if not (python.exists() and os.access(python, os.X_OK)):
        raise EnvError(f"no Python at {python} for the hub's users: install Debian's python3 "
                       f"(apt-get install python3 python3-venv) or set COURSE_HUB_PYTHON")
    if not world_reachable(python) or not os.stat(os.path.realpath(python)).st_mode & 0o001:
        raise EnvError(f"{python} cannot be run by other accounts (a folder above it is private): "
                       f"the students' servers could not start; set COURSE_HUB_PYTHON to a system Python")
    return python


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise EnvError(f"{package} is not installed in {sys.prefix}: pip install -e '.[hub]' (make venv does)") from None


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _fresh(env: Path, key: str) -> bool:
    stamp = env / STAMP
    return stamp.is_file() and stamp.read_text() == key and (env / "bin" / "jupyterhub-singleuser").exists()


def _pip(env: Path, args: list[str], log: Path) -> None:
    with open(log, "a") as out:
        result = subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", *args],
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PIP_NO_INPUT": "1"})
    if result.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-15:])
        raise EnvError(f"pip install {' '.join(args)} into {env} failed (log: {log}):\n{tail}")


def _build(env: Path, key: str, installs: list[list[str]], log: Path) -> Path:
    key = _key(key, repr(installs))  # what is installed is part of what the environment is
    if _fresh(env, key):
        return env
    shutil.rmtree(env, ignore_errors=True)
    env.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    made = subprocess.run([str(base_python()), "-m", "venv", str(env)], capture_output=True, text=True)
    if made.returncode != 0:
        raise EnvError(f"python -m venv {env} failed: {made.stderr.strip()} (Debian: apt-get install python3-venv)")
    for args in installs:
        _pip(env, args, log)
    (env / STAMP).write_text(key)
    return env


def _wheel_metadata(wheel: Path) -> str:
    """A wheel's METADATA (its name, version and dependencies): what the wheel's file name does
    not say, a dependency added to pyproject.toml, changes the environment too."""
    with zipfile.ZipFile(wheel) as archive:
        return next(archive.read(name).decode() for name in archive.namelist()
                    if name.endswith(".dist-info/METADATA"))


def student_env(layout: HubLayout, wheel: Path) -> Path:
    """The students' environment: the student install's wheel and the single-user server."""
    hub = _version("jupyterhub")
    key = _key(wheel.name, _wheel_metadata(wheel), hub, str(base_python()))
    return _build(layout.student_env, key, [[str(wheel), f"jupyterhub=={hub}"]],
                  layout.root / "student-env.log")


def grader_env(layout: HubLayout) -> Path:
    """The grader service's environment: the bundle copy in layout.bundle, installed editable
    (course_tools finds the bundle's assignments/ and autograder/ beside it) with its `test`
    extra: PyTorch and pytest, which the hidden suites need, and the PostgreSQL and Dask clients."""
    hub, torch = _version("jupyterhub"), _version("torch")
    pyproject = (layout.bundle / "pyproject.toml").read_bytes()
    key = _key(hashlib.sha256(pyproject).hexdigest(), hub, torch, str(base_python()), str(layout.bundle))
    return _build(layout.grader_env, key, [[f"torch=={torch}"], [f"jupyterhub=={hub}", "-e", f"{layout.bundle}[test]"]],
                  layout.root / "grader-env.log")
