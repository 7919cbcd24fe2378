"""One cgroup per worker: caps its processes and memory, and kills all of them at the end.

Killing a process group is not enough: a submission can double-fork a `setsid` daemon that
leaves the group and outlives its grading. Everything the worker starts stays in its cgroup
(an unprivileged process cannot move itself out), so the kill takes the cgroup:

    cgroup v2 (or the v2 hierarchy of a hybrid machine)   write 1 to cgroup.kill
    cgroup v1                                             freeze, SIGKILL each member, thaw

The group is removed once it is empty; groups left behind by a grader that was itself killed
(their name carries its pid) are swept away the next time a worker starts.

Creating cgroups needs root, or a delegated subtree; ``Cgroup.available()`` says whether this
machine lets us. bubblewrap's PID namespace kills the whole sandbox without one; grading
without bubblewrap (--unsandboxed) refuses to start without one.
"""
from __future__ import annotations

import os
import re
import signal
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "course-grader-"


def _hierarchies() -> dict[str, Path]:
    """Where each controller we use lives: {"unified"|"pids"|"memory"|"freezer": folder}."""
    if (ROOT / "cgroup.controllers").exists():  # pure cgroup v2
        return {"unified": ROOT}
    found = {}
    for name in ("pids", "memory", "freezer"):
        if (ROOT / name / "cgroup.procs").exists():
            found[name] = ROOT / name
    if (ROOT / "unified" / "cgroup.procs").exists():
        found["unified"] = ROOT / "unified"
    return found


def _write(path: Path, value) -> bool:
    try:
        path.write_text(str(value))
        return True
    except OSError:
        return False


def _members(folder: Path) -> list[int]:
    try:
        return [int(line) for line in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


class Cgroup:
    """A fresh cgroup in every hierarchy we can write to, with the limits set."""

    def __init__(self, processes: int, memory_bytes: int):
        sweep_stale()
        self.name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.dirs: dict[str, Path] = {}
        for kind, root in _hierarchies().items():
            folder = root / self.name
            try:
                folder.mkdir()
            except OSError:
                continue
            self.dirs[kind] = folder
        unified = self.dirs.get("unified")
        if unified is not None:
            _write(unified / "pids.max", processes) if (unified / "pids.max").exists() else None
            _write(unified / "memory.max", memory_bytes) if (unified / "memory.max").exists() else None
            _write(unified / "memory.swap.max", 0) if (unified / "memory.swap.max").exists() else None
        if "pids" in self.dirs:
            _write(self.dirs["pids"] / "pids.max", processes)
        if "memory" in self.dirs:
            _write(self.dirs["memory"] / "memory.limit_in_bytes", memory_bytes)

    @staticmethod
    def available() -> bool:
        """Whether this process may create cgroups here (root, or a delegated hierarchy)."""
        return any(os.access(root, os.W_OK) for root in _hierarchies().values())

    def caps_processes(self) -> bool:
        unified = self.dirs.get("unified")
        return "pids" in self.dirs or bool(unified and (unified / "pids.max").exists())

    def holds_processes(self) -> bool:
        """Whether the group can list (and so kill) every process the worker starts."""
        return bool(self.dirs)

    def enter(self) -> None:
        """Called in the child before exec: move it into the cgroup (its children follow)."""
        for folder in self.dirs.values():
            _write(folder / "cgroup.procs", os.getpid())

    def members(self) -> set[int]:
        return {pid for folder in self.dirs.values() for pid in _members(folder)}

    def kill(self, timeout: float = 10.0) -> bool:
        """SIGKILL every process in the group and wait until none is left; True when empty."""
        deadline = time.monotonic() + timeout
        while True:
            self._kill_once()
            if not self.members():
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)

    def _kill_once(self) -> None:
        unified = self.dirs.get("unified")
        if unified is not None and _write(unified / "cgroup.kill", 1):
            return
        freezer = self.dirs.get("freezer")
        frozen = freezer is not None and _write(freezer / "freezer.state", "FROZEN")
        try:
            for pid in self.members():
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        finally:
            if frozen:
                _write(freezer / "freezer.state", "THAWED")

    def remove(self) -> None:
        """Kill what is left, then delete the group in every hierarchy."""
        self.kill()
        for folder in self.dirs.values():
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: a member is still being reaped
                    time.sleep(0.02)
        self.dirs = {}


_NAME = re.compile(re.escape(PREFIX) + r"(\d{1,7})-[0-9a-f]{8}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> int:
    """Remove the groups of graders that died without cleaning up; returns how many."""
    removed = 0
    for root in _hierarchies().values():
        try:
            entries = [p for p in root.iterdir() if p.name.startswith(PREFIX) and p.is_dir()]
        except OSError:
            continue
        for folder in entries:
            match = _NAME.fullmatch(folder.name)
            if match is None:  # another naming scheme: remove it only if it is empty
                try:
                    folder.rmdir()
                    removed += 1
                except OSError:
                    pass
                continue
            if _pid_alive(int(match.group(1))):
                continue
            stale = Cgroup.__new__(Cgroup)
            kind = "unified" if root in (ROOT, ROOT / "unified") else root.name
            stale.name, stale.dirs = folder.name, {kind: folder}
            stale.remove()
            removed += 1
    return removed


def leftover_groups(owner: int | None = None) -> list[Path]:
    """The course-grader cgroups on this machine, or those made by the grader process ``owner``
    (tests check that none outlives its grading)."""
    found = []
    for root in _hierarchies().values():
        try:
            found += [p for p in root.iterdir() if p.name.startswith(PREFIX)]
        except OSError:
            pass
    if owner is not None:
        found = [p for p in found if (m := _NAME.fullmatch(p.name)) and int(m.group(1)) == owner]
    return found
