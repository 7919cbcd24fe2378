"""What the sandboxed worker may read: an allow-list, computed from this interpreter.

    the interpreter           its executable (and libpython, where Python is built shared)
    the standard library      sysconfig's stdlib folders, with any site-packages inside masked
    the worker's packages     numpy, matplotlib, tqdm and IPython (what the releases import), with what
                              they require, one folder or file per top-level name
    system shared libraries   the multiarch/lib64 folders the dynamic loader searches, and
                              /etc/ld.so.cache

Nothing else of the machine is bound: not this repository (the job brings its own copy of the
worker and of the release's student-facing course_lib), not PyTorch, not /usr/bin (no shell,
no git), not the course folder, the exchange or anyone's home.
"""
from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# The packages a release's notebook imports besides course_lib (checked by tests/test_grading_sandbox.py).
WORKER_PACKAGES = ("numpy", "matplotlib", "tqdm", "ipython")
NEVER = {"torch", "functorch", "torchvision", "nbgrader", "course-lib"}


@dataclass(frozen=True)
class RuntimeView:
    """Host paths bound read-only at the same place inside the sandbox."""
    binds: tuple[Path, ...]          # the interpreter, the standard library, the system's shared libraries
    masks: tuple[Path, ...]          # folders inside binds shown empty (site-packages in the stdlib)
    packages: tuple[Path, ...]       # the worker's packages, bound after the masks (they may lie inside one)
    symlinks: tuple[tuple[str, str], ...]  # (target, link) re-created at the top level, e.g. ("usr/lib", "/lib")
    python: Path                     # the interpreter to run
    package_dirs: tuple[Path, ...]   # what the worker puts on sys.path (holding only the packages above)


def _requirement_name(text: str) -> str | None:
    if ";" in text and "extra" in text.split(";", 1)[1]:
        return None  # an optional extra: not installed for us
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", text)
    return match.group(1) if match else None


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distributions(roots=WORKER_PACKAGES) -> dict[str, importlib.metadata.Distribution]:
    """The installed distributions of ``roots`` and everything they require, by normalised name."""
    found, todo = {}, list(roots)
    while todo:
        name = _normal(todo.pop())
        if name in found or name in NEVER:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # a requirement with an environment marker that does not apply here
        if dist.requires:
            for line in dist.requires:
                marker = line.split(";", 1)[1] if ";" in line else ""
                if marker and "extra" not in marker and not _marker_applies(marker):
                    continue
                requirement = _requirement_name(line)
                if requirement:
                    todo.append(requirement)
        found[name] = dist
    return found


def _marker_applies(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:
        return True
    try:
        return Marker(marker).evaluate()
    except Exception:  # noqa: BLE001 - an unreadable marker: be generous, the package may be needed
        return True


def _top_level_paths(dist) -> set[Path]:
    # Each top-level name resolved once (a package lists thousands of files under a few names).
    tops = {Path(file).parts[0] for file in dist.files or () if Path(file).parts}
    tops.discard("..")  # scripts installed outside site-packages (bin/): not needed
    paths = {Path(dist.locate_file(top)).resolve() for top in tops}
    return {p for p in paths if p.exists() and p.name != "__pycache__"}


def _system_libraries() -> tuple[list[Path], list[tuple[str, str]]]:
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    binds, links = [], []
    for top in ("/lib", "/lib64", "/lib32"):
        if os.path.islink(top):
            links.append((os.readlink(top), top))
    for candidate in (f"/usr/lib/{multiarch}", "/usr/lib64", f"/lib/{multiarch}", "/lib64"):
        path = Path(candidate)
        if multiarch == "" and candidate.endswith("/"):
            continue
        if path.is_dir() and not any(str(path).startswith(link + "/") or str(path) == link for _, link in links):
            binds.append(path)
    if Path("/etc/ld.so.cache").is_file():
        binds.append(Path("/etc/ld.so.cache"))
    return binds, links


@functools.lru_cache(maxsize=None)
def runtime_view() -> RuntimeView:
    python = Path(os.path.realpath(sys.executable))
    binds = {python}
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        libdir, name = sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")
        if libdir and name and (Path(libdir) / name).exists():
            binds.add(Path(libdir) / name)
    # The base interpreter's folders, not a virtual environment's (whose lib/ holds only site-packages).
    base = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
            "installed_base": sys.base_prefix, "installed_platbase": sys.base_exec_prefix}
    stdlib = {Path(sysconfig.get_paths(vars=base)[key]).resolve() for key in ("stdlib", "platstdlib")}
    binds |= stdlib
    masks = {p for folder in stdlib for name in ("site-packages", "dist-packages")
             for p in [folder / name] if p.is_dir()}
    package_paths = set()
    for dist in distributions().values():
        package_paths |= _top_level_paths(dist)
    system, links = _system_libraries()
    binds |= set(system)
    return RuntimeView(binds=tuple(sorted(binds)), masks=tuple(sorted(masks)), packages=tuple(sorted(package_paths)),
                       symlinks=tuple(links), python=python,
                       package_dirs=tuple(sorted({p.parent for p in package_paths})))
