"""The grading core's old dotted paths, importable for one more release (they go in the next).

Before the regroup into packages (suite/, session/, sandbox/, diagnosis/, launch/, nbgrader/),
every module sat in this folder. Course folders made by an earlier `course init` name some of
them in their own nbgrader_config.py (``course_tools.grading.nbgrader_plugin``), and code
outside this repository may import others. An old name still imports the one module it became
(the same object, so its state and its classes are shared), with a DeprecationWarning naming
the new path:

    course_tools.grading.nbgrader_plugin         -> course_tools.grading.nbgrader.plugin
    from course_tools.grading.suite import run_suite   (suite is now a package: the name is
                                                        looked up in suite.run, with a warning)

Nothing in this repository uses an old name; tests/test_layers.py checks that they still import.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from pathlib import Path

PACKAGE = "course_tools.grading"
# Old module (relative to course_tools.grading) -> the module it became. The four whose old
# name is now a package's (suite, session, sandbox, diagnosis) answer through that package's
# __getattr__ (old_names below) instead of here.
MOVED = {
    "channel": "session.channel", "expect": "session.expect",
    "cgroups": "sandbox.cgroups", "runtime": "sandbox.runtime", "worker": "sandbox.worker",
    "probes": "diagnosis.probes", "probe_calls": "diagnosis.probe_calls", "reference": "diagnosis.reference",
    "torch_reference": "diagnosis.torch_reference",
    "pool": "launch.pool", "preload": "launch.preload", "runner": "launch.runner", "fanout": "launch.fanout",
    "nbgrader_plugin": "nbgrader.plugin", "restore_cells": "nbgrader.restore_cells",
}
# A package whose name an old module had -> the module that old one became.
BECAME_PACKAGE = {"suite": "suite.run", "session": "session.session", "sandbox": "sandbox.bwrap",
                  "diagnosis": "diagnosis.diagnosis"}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} moved to {new}; the old name goes in the next release (a course folder's "
                  f"nbgrader_config.py that names it: run `course init` again, or edit the name)",
                  DeprecationWarning, stacklevel=3)


def new_name(fullname: str) -> str | None:
    """The module an old dotted name became (submodules of an old package included), or None."""
    if not fullname.startswith(PACKAGE + "."):
        return None
    old = fullname[len(PACKAGE) + 1:]
    head, dot, rest = old.partition(".")
    if head not in MOVED:
        return None
    return f"{PACKAGE}.{MOVED[head]}{dot}{rest}"


class OldNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old dotted name as the module it became (one object under both names)."""

    def __init__(self):
        self._specs = {}

    def find_spec(self, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=new.endswith(".worker"))

    def create_module(self, spec):
        new = new_name(spec.name)
        _warn(spec.name, new)
        module = importlib.import_module(new)
        self._specs[spec.name] = module.__spec__  # the import system sets __spec__ to the alias's
        return module

    def exec_module(self, module):
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def install() -> None:
    if not any(isinstance(finder, OldNames) for finder in sys.meta_path):
        sys.meta_path.insert(0, OldNames())


def old_names(package: str):
    """A package's __getattr__ for the names of the module whose name it took (BECAME_PACKAGE):
    ``course_tools.grading.suite.run_suite`` finds suite.run.run_suite, with a warning. A
    submodule's name is never answered here, so that ``from .suite import run`` imports it."""
    short = package[len(PACKAGE) + 1:]
    moved = f"{PACKAGE}.{BECAME_PACKAGE[short]}"
    folder = Path(sys.modules[package].__file__).parent

    def __getattr__(name: str):
        if name.startswith("__") or (folder / f"{name}.py").exists() or (folder / name).is_dir():
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(moved)
        if not hasattr(module, name):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        _warn(f"{package}.{name}", f"{moved}.{name}")
        return getattr(module, name)

    return __getattr__
