"""One cgroup per worker: caps its processes, memory and CPU, counts its CPU time, and kills
all of them at the end.

Killing a process group is not enough: a submission can double-fork a `setsid` daemon that
leaves the group and outlives its grading. Everything the worker starts stays in its cgroup
(an unprivileged process cannot move itself out), so the kill takes the cgroup:

    cgroup v2 (or the v2 hierarchy of a hybrid machine)   write 1 to cgroup.kill
    cgroup v1                                             freeze, SIGKILL each member, thaw

CPU: each grading gets at most ``cpus`` CPUs (COURSE_GRADER_CPUS, one by default), so a
submission that starts busy loops, each under its own ``os.setsid()`` (on a machine with
scheduler autogroups, each session is a group of its own and takes an equal share), takes one
CPU, never its neighbours'. Being in a cpu cgroup also takes the worker out of autogrouping:
gradings share the machine group by group, however many processes each starts.

    cgroup v2 (pure, or a hybrid machine's unified hierarchy with the cpu controller)
        cpu.max "<quota> <period>", after enabling +cpu in the parent's cgroup.subtree_control
    cgroup v1                                             cpu.cfs_quota_us / cpu.cfs_period_us

The time a worker costs is read from its group (``cpu_seconds``: v2 cpu.stat usage_usec, v1
cpuacct.usage): its own processes, children included, and nobody else's.

The group is removed once it is empty; groups left behind by a grader that was itself killed
(their name carries its pid) are swept away the next time a worker starts.

Creating cgroups needs root, or a delegated subtree; ``Cgroup.available()`` says whether this
machine lets us. bubblewrap's PID namespace kills the whole sandbox without one; grading
without bubblewrap (--unsandboxed) refuses to start without one.
"""
from __future__ import annotations

import logging
import os
import re
import signal
import time
import uuid
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "course-grader-"
CPU_PERIOD_US = 100_000
log = logging.getLogger(__name__)


def _hierarchies() -> dict[str, Path]:
    """Where each controller we use lives: {"unified"|"pids"|"memory"|"freezer"|"cpu"|"cpuacct": folder}."""
    if (ROOT / "cgroup.controllers").exists():  # pure cgroup v2
        return {"unified": ROOT}
    found, seen = {}, set()
    for name in ("pids", "memory", "freezer", "cpu", "cpuacct"):
        folder = ROOT / name
        # cpu and cpuacct are often one hierarchy mounted as cpu,cpuacct with both names linked to it
        if (folder / "cgroup.procs").exists() and folder.resolve() not in seen:
            found[name] = folder
            seen.add(folder.resolve())
    if (ROOT / "unified" / "cgroup.procs").exists():
        found["unified"] = ROOT / "unified"
    return found


def _v1(kind: str, dirs: dict[str, Path]) -> Path | None:
    """The v1 folder holding ``kind``'s files: its own hierarchy, or the co-mounted cpu,cpuacct one."""
    if kind in dirs:
        return dirs[kind]
    other = {"cpu": "cpuacct", "cpuacct": "cpu"}.get(kind)
    folder = dirs.get(other)
    return folder if folder is not None and (folder / f"{kind}.stat").exists() else None


def _controllers(folder: Path, file: str) -> set[str]:
    try:
        return set((folder / file).read_text().split())
    except OSError:
        return set()


def _enable_cpu_controller(parent: Path) -> bool:
    """Let the parent's children have cpu.max (v2 hands a controller down only when asked)."""
    if "cpu" in _controllers(parent, "cgroup.subtree_control"):
        return True
    if "cpu" not in _controllers(parent, "cgroup.controllers"):
        return False  # bound to a v1 hierarchy (hybrid machine) or not given to this subtree
    return _write(parent / "cgroup.subtree_control", "+cpu")


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


def _state(tid: int) -> tuple[bytes, int] | None:
    """(state, parent pid) of a thread or process from /proc/TID/stat; None when it is gone."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as stat:
            text = stat.read(512)
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()   # the name, in parentheses, may hold anything
    try:
        return fields[0], int(fields[1])
    except (IndexError, ValueError):
        return None


def runnable(tids: list[int]) -> bool:
    """Whether one of these threads is running or waiting to run, or in uninterruptible I/O
    (state R or D); False when every one sleeps, is stopped or is gone."""
    return any((found := _state(tid)) is not None and found[0] in (b"R", b"D") for tid in tids)


def tree_threads(pid: int) -> list[int]:
    """Every thread of ``pid`` and of its descendants (where no cgroup lists them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (found := _state(int(entry))) is not None:
            children.setdefault(found[1], []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        process = todo.pop()
        try:
            out += [int(t) for t in os.listdir(f"/proc/{process}/task")]
        except OSError:
            pass
        todo += children.get(process, [])
    return out


class Cgroup:
    """A fresh cgroup in every hierarchy we can write to, with the limits set."""

    def __init__(self, processes: int, memory_bytes: int, cpus: float = 1.0):
        """``cpus``: how many CPUs the group's processes may use together (0: no cap)."""
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
        if unified is not None and cpus > 0:
            _enable_cpu_controller(unified.parent)  # cpu.max then appears in the new group too
        if unified is not None:
            _write(unified / "pids.max", processes) if (unified / "pids.max").exists() else None
            _write(unified / "memory.max", memory_bytes) if (unified / "memory.max").exists() else None
            _write(unified / "memory.swap.max", 0) if (unified / "memory.swap.max").exists() else None
        if "pids" in self.dirs:
            _write(self.dirs["pids"] / "pids.max", processes)
        if "memory" in self.dirs:
            _write(self.dirs["memory"] / "memory.limit_in_bytes", memory_bytes)
        # How the group's CPU is capped (the file written), or None: not capped
        self.cpu_cap: str | None = self._cap_cpu(cpus) if cpus > 0 else None

    def _cap_cpu(self, cpus: float) -> str | None:
        """Cap the group at ``cpus`` CPUs; says how (the file written), or None when it could not."""
        quota = max(1000, int(cpus * CPU_PERIOD_US))
        unified = self.dirs.get("unified")
        if unified is not None and _write(unified / "cpu.max", f"{quota} {CPU_PERIOD_US}"):
            return f"cpu.max {quota} {CPU_PERIOD_US}"
        cpu = _v1("cpu", self.dirs)
        if cpu is not None and _write(cpu / "cpu.cfs_period_us", CPU_PERIOD_US) \
                and _write(cpu / "cpu.cfs_quota_us", quota):
            return f"cpu.cfs_quota_us {quota} per {CPU_PERIOD_US}"
        if not _warned_cpu:
            _warned_cpu.append(True)
            log.warning("this machine gives the grader no cgroup CPU controller (neither cgroup v2 cpu.max nor "
                        "v1 cpu.cfs_quota_us): a grading's CPU is not capped, and a submission's busy loops can "
                        "slow the gradings beside it (their time budgets still count only their own CPU time)")
        return None

    def cpu_seconds(self) -> float | None:
        """CPU time used so far by every process of the group (None: this machine cannot say)."""
        unified = self.dirs.get("unified")
        if unified is not None:
            try:
                for line in (unified / "cpu.stat").read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) / 1e6
            except (OSError, ValueError):
                pass
        cpuacct = _v1("cpuacct", self.dirs)
        if cpuacct is not None:
            try:
                return int((cpuacct / "cpuacct.usage").read_text()) / 1e9
            except (OSError, ValueError):
                pass
        return None

    def runnable(self) -> bool | None:
        """Whether a thread of the group runs or waits for a CPU (``runnable``); None: the group's
        threads cannot be listed."""
        for folder in self.dirs.values():
            for listing in ("cgroup.threads", "tasks"):   # v2, v1: every thread of the group
                try:
                    return runnable([int(line) for line in (folder / listing).read_text().split()])
                except (OSError, ValueError):
                    continue
        return None

    def out_of_memory_kills(self) -> int:
        """How many of the group's processes the kernel killed for reaching its memory limit."""
        kills = 0
        for path, key in ((self.dirs.get("unified"), "memory.events"), (self.dirs.get("memory"), "memory.oom_control")):
            try:
                for line in (path / key).read_text().splitlines():
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        kills += int(value)
            except (OSError, TypeError, ValueError):
                pass
        return kills

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


_warned_cpu: list = []  # the "no CPU controller" warning is given once per process
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
