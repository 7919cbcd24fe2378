"""Starting the worker in a sandbox.

Strong mode (bubblewrap, Debian package ``bubblewrap``, found on PATH):
  - new user, PID, network, IPC and UTS namespaces: no network, no view of other processes,
    the worker runs as ``nobody`` inside;
  - the file system is read-only, with the secrets masked by empty directories: the reference
    course_lib, autograder/, solutions/, source/, the nbgrader course's gradebook and
    submissions, PyTorch (so a submission cannot borrow a framework's conv), and /root;
  - only the job folder is writable.
Both modes:
  - resource limits: address space, CPU seconds, file size, open files, no core dumps;
  - a cgroup (v1 or v2, where the machine lets us make one) caps the number of processes and
    the total memory, which stops fork bombs;
  - the grader kills the whole process group on a timeout.
Fallback mode (no bubblewrap): resource limits and the cgroup only, and the worker runs as
``nobody`` when the grader is root and nobody can reach the interpreter (otherwise as the
grader's user, with the cgroup capping its processes). It can then read files that are
world-readable, and when it could not drop to nobody it can signal the grader's processes
(the grading subprocess of that one submission dies; nbgrader's batch goes on). Keep the
course's secrets out of reach with file permissions (chmod 700) when grading this way, and
prefer installing bubblewrap.
"""
from __future__ import annotations

import os
import resource
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _setting(name: str, default: int, scale: int = 1) -> int:
    """A limit from the environment (nbgrader_config.py sets these for the grading processes)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(float(raw) * scale)
    except ValueError:
        raise ValueError(f"{name}={raw!r} must be a number") from None


@dataclass
class Limits:
    """Per-submission limits. Defaults, or COURSE_GRADER_MEMORY_MB, COURSE_GRADER_CPU_SECONDS,
    COURSE_GRADER_PROCESSES in the environment."""
    # address space of the worker: past it, MemoryError; the cgroup (all its processes) gets 1.5x
    memory_bytes: int = field(default_factory=lambda: _setting("COURSE_GRADER_MEMORY_MB", 2 * 1024 ** 3, 1024 ** 2))
    cgroup_memory_bytes: int = None
    cpu_seconds: int = field(default_factory=lambda: _setting("COURSE_GRADER_CPU_SECONDS", 300))
    file_bytes: int = 64 * 1024 ** 2
    open_files: int = 256
    processes: int = field(default_factory=lambda: _setting("COURSE_GRADER_PROCESSES", 32))

    def __post_init__(self):
        if self.cgroup_memory_bytes is None:
            self.cgroup_memory_bytes = self.memory_bytes * 3 // 2


def nobody_can_run_python() -> bool:
    """Whether user nobody could start this interpreter and read course_tools: only then can
    the fallback drop privileges. Every folder on the way needs o+x, the files o+r (o+x too
    for the interpreter)."""
    import stat

    needs = {Path(os.path.realpath(sys.executable)): stat.S_IROTH | stat.S_IXOTH,
             ROOT / "course_tools" / "grading" / "worker.py": stat.S_IROTH}
    for target, file_bits in needs.items():
        try:
            if target.stat().st_mode & file_bits != file_bits:
                return False
            if any(not parent.stat().st_mode & stat.S_IXOTH for parent in target.parents):
                return False
        except OSError:
            return False
    return True


def bubblewrap() -> str | None:
    return None if os.environ.get("COURSE_GRADER_NO_BWRAP") else shutil.which("bwrap")


def sandbox_kind() -> str:
    return "bubblewrap" if bubblewrap() else "rlimits"


def _site_packages_dir(name: str) -> list[Path]:
    found = []
    for entry in sys.path:
        candidate = Path(entry) / name
        if entry and candidate.is_dir():
            found.append(candidate)
    return found


def masked_paths(course_root: Path | None) -> list[Path]:
    paths = [ROOT / "course_lib", ROOT / "autograder", ROOT / "solutions", ROOT / "source"]
    paths += _site_packages_dir("torch") + _site_packages_dir("functorch")
    if course_root is not None:
        paths += [course_root / name for name in ("submitted", "autograded", "feedback", "source", "gradebook.db",
                                                  "autograder", "solutions", "release", ".hidden_suite_results")]
    return [p for p in paths if p.exists()]


def worker_command(jobdir: Path, request_fd: int, response_fd: int, course_root: Path | None) -> list[str]:
    python = sys.executable
    command = [python, "-I", "-c",
               "import sys; sys.path[:0] = sys.argv[1:3]; from course_tools.grading.worker import main; "
               "sys.exit(main(sys.argv[3:]))",
               str(jobdir), str(ROOT), str(jobdir), str(request_fd), str(response_fd)]
    bwrap = bubblewrap()
    if not bwrap:
        return command
    hidden = ("/tmp", "/root")
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
            "--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY),
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    for folder in hidden:
        args += ["--tmpfs", folder]
    # The interpreter, the virtual environment and this repository may live below a hidden
    # folder (a CI clone in /tmp, pyenv in /root): bind them back, read-only, before masking.
    for keep in sorted({Path(sys.base_prefix), Path(sys.prefix), ROOT}):
        if str(keep).startswith(tuple(f"{h}/" for h in hidden)):
            args += ["--ro-bind", str(keep), str(keep)]
    for path in masked_paths(course_root):
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--bind", str(jobdir), str(jobdir), "--chdir", str(jobdir)]
    return args + command


class Cgroup:
    """A cgroup capping processes and memory, if this machine lets us create one."""

    def __init__(self, limits: Limits):
        self.dirs: list[Path] = []
        name = f"course-grader-{uuid.uuid4().hex[:12]}"
        unified = Path("/sys/fs/cgroup")
        settings = []
        if (unified / "cgroup.controllers").exists():
            settings = [(unified / name, {"pids.max": limits.processes, "memory.max": limits.cgroup_memory_bytes})]
        else:
            settings = [(unified / "pids" / name, {"pids.max": limits.processes}),
                        (unified / "memory" / name, {"memory.limit_in_bytes": limits.cgroup_memory_bytes})]
        for folder, values in settings:
            try:
                folder.mkdir()
                self.dirs.append(folder)
                for key, value in values.items():
                    (folder / key).write_text(str(value))
            except OSError:
                continue

    def enter(self) -> None:
        """Called in the child before exec: move it into the cgroup."""
        for folder in self.dirs:
            try:
                (folder / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                pass

    def remove(self) -> None:
        for folder in self.dirs:
            try:
                folder.rmdir()
            except OSError:
                pass


def preexec(limits: Limits, cgroup: Cgroup, drop_privileges: bool):
    def apply():
        os.setsid()
        cgroup.enter()
        for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_CPU, limits.cpu_seconds),
                             (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_NOFILE, limits.open_files),
                             (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(which, (value, value))
        if drop_privileges:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
    return apply


def worker_env(jobdir: Path) -> dict:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(jobdir), "LANG": "C.UTF-8",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(jobdir / ".matplotlib"), "NBGRADER_EXECUTION": "autograde",
           "PYTHONDONTWRITEBYTECODE": "1", "COURSE_LIB_DEVICE": "cpu"}
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine settings OpenBLAS needs here
        if key in os.environ:
            env[key] = os.environ[key]
    return env
