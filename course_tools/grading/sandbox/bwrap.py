"""Starting the worker: what it sees, as whom it runs, and what it may use.

What it sees (bubblewrap, the Debian package ``bubblewrap``): an empty root with only
  - the allow-list of runtime.py, read-only: the interpreter, the standard library, numpy,
    matplotlib, tqdm and what they require, the system's shared libraries;
  - the job folder, read-only, at /.course-grader/job: job.json (the cells to run), the worker's own code
    (course_tools/grading/sandbox/worker, copied) and the student-facing course_lib of the release
    being graded (copied from assignments/<id>/course_lib);
  - /.course-grader/work, a tmpfs of at most COURSE_GRADER_DISK_MB (its cwd and $HOME; /tmp points into it),
    the only place it can write; a fresh /proc of its own PID namespace and a minimal /dev.
  No network (its own network namespace: not even loopback works), no other process, nothing
  of the repository, its history, the course folder, the exchange or anyone's home.

As whom it runs: never root. When the grader is root, the worker becomes the grading account
(COURSE_GRADER_USER, else ``course-grader`` if it exists, else ``nobody``) before any student
code runs: root starts bubblewrap (only root can bind paths that only root can reach, such as
a Python under /root), and the worker's first lines drop to that account for good, so file
permissions outside protect what they should. A non-root grader runs bubblewrap in a user
namespace; the worker is then the grader's own user outside, and the allow-list is what
protects the rest of the machine.

What it may use, in every mode: an address-space limit, CPU seconds, a file-size limit, open
files, no core dumps (rlimits); a cgroup (cgroups.py) capping processes, total memory (its
tmpfs counts as memory) and CPUs (one by default); the write cap above. Its time limits count
its own CPU time, with a wall-clock backstop (Limits, limits.py). The grader kills everything in the cgroup (or
the whole PID namespace) when a worker is done.

Without bubblewrap, grading refuses to start (SandboxUnavailable, a grading error) unless the
instructor opts in with ``--unsandboxed`` / COURSE_GRADER_UNSANDBOXED=1: the worker then runs on
the machine as the grading account, sees every world-readable file, and is contained only by
the limits and its cgroup (required in that mode: every process it starts is killed before
the next submission).
"""
from __future__ import annotations

import json
import os
import pwd
import re
import resource
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .cgroups import Cgroup
from .limits import Limits
from .runtime import runtime_view

WORKER_PACKAGE = Path(__file__).resolve().parent / "worker"
# Inside the sandbox: names no host path of the allow-list uses (checked in _bubblewrap_args).
INSIDE_ROOT = "/.course-grader"
INSIDE_JOB, INSIDE_WORK = f"{INSIDE_ROOT}/job", f"{INSIDE_ROOT}/work"

# The worker's first lines: drop root for good, then import only from the allowed paths.
BOOTSTRAP = """\
import os, sys
uid, gid = int(sys.argv[1]), int(sys.argv[2])
if uid >= 0:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
if 0 in (os.getuid(), os.geteuid()) or (uid >= 0 and 0 in os.getresgid()):
    raise SystemExit("refusing to run a submission as root")
sys.path[:0] = sys.argv[3].split(os.pathsep)
from grading_worker.main import main
sys.exit(main(sys.argv[4:]))
"""


class SandboxUnavailable(RuntimeError):
    """The worker cannot be started as safely as configured: a grading error, never a score."""


# ------------------------------------------------------------------------------ who and how
@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int


def grading_account() -> Account | None:
    """The account the worker runs as when the grader is root; None when the grader is not root
    (the worker then stays the grader's own user, inside a user namespace)."""
    if os.geteuid() != 0:
        return None
    wanted = os.environ.get("COURSE_GRADER_USER")
    names = [wanted] if wanted else ["course-grader", "nobody"]
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid == 0 or entry.pw_gid == 0:
            raise SandboxUnavailable(f"COURSE_GRADER_USER={name!r} is root: grading needs an unprivileged account")
        return Account(name, entry.pw_uid, entry.pw_gid)
    raise SandboxUnavailable(f"no grading account: user {names[0]!r} does not exist "
                             f"(create it with `useradd --system --no-create-home course-grader`)")


def bubblewrap() -> str | None:
    return None if os.environ.get("COURSE_GRADER_NO_BWRAP") else shutil.which("bwrap")


def sandbox_kind(unsandboxed_allowed: bool) -> str:
    """'bubblewrap', or 'unsandboxed' when the instructor opted in (settings.py); SandboxUnavailable
    otherwise."""
    if bubblewrap():
        return "bubblewrap"
    if unsandboxed_allowed:
        return "unsandboxed"
    raise SandboxUnavailable(
        "bubblewrap is not installed, so submissions cannot be isolated: install it (apt-get install bubblewrap), "
        "or grade without isolation at your own risk with --unsandboxed (COURSE_GRADER_UNSANDBOXED=1)")


def _reachable_by(account: Account | None, path: Path, bits: int) -> bool:
    """Whether ``account`` can reach ``path`` through "other" permissions (it owns none of them)."""
    if account is None:
        return os.access(path, os.R_OK)
    try:
        if path.stat().st_mode & bits != bits:
            return False
        return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.parents)
    except OSError:
        return False


# ------------------------------------------------------------------------------ the job folder
JOB_PREFIX = "course-job-"
# course-job-<grader pid>-<its start time in clock ticks since boot>-<mkdtemp's random part>
_JOB_NAME = re.compile(re.escape(JOB_PREFIX) + r"(\d{1,10})-(\d{1,20})-[A-Za-z0-9_]+")
_UNNAMED_JOB_DAYS = 1  # a job folder named before graders put their pid in it: removed when this old


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat's 22nd field), or
    None when there is no such process. A pid alone can be reused by any later process."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    return stat_line.rpartition(")")[2].split()[19]


def _alive(pid: int, started: str) -> bool:
    return _process_start(pid) == started


def jobs_folder() -> Path:
    """Where job folders are made (the machine's temporary folder, $TMPDIR)."""
    return Path(tempfile.gettempdir())


def sweep_stale_jobs() -> list[Path]:
    """Remove the job folders this account made whose grader is gone (killed at its time limit,
    SIGKILLed, its machine's power cut): every grader calls it before making its own. Folders of
    other accounts are never touched; nor is anything but a real folder (no link is followed)."""
    removed = []
    try:
        entries = list(os.scandir(jobs_folder()))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(JOB_PREFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            continue
        match = _JOB_NAME.fullmatch(entry.name)
        if match is not None:
            if _alive(int(match.group(1)), match.group(2)):
                continue
        elif time.time() - info.st_mtime < _UNNAMED_JOB_DAYS * 86400:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)  # rmtree never follows symbolic links
        removed.append(Path(entry.path))
    return removed


class JobFolder:
    """The grader's folder for one submission (never writable by the worker):

        <job>/ro/job.json, ro/grading_worker/, ro/course_lib/   bound read-only at INSIDE_JOB
        <job>/work/                                             unsandboxed mode only: the worker's cwd

    Who can read it: the grader, and the worker's account, nobody else (job.json holds a student's
    code). A root grader owns it with the grading account's group: folders 0750, files 0640 (the
    worker reads, cannot change a thing); a grader that is not root runs the worker as itself:
    0700 and 0600. Its name carries the grader's pid and start time, so that sweep_stale_jobs,
    which every new job folder runs first, removes the folders of graders that died.
    """

    def __init__(self, assignment: str, cells: list[dict], cell_timeout: int, account: Account | None,
                 wall_factor: float = 4.0, course_lib: Path | None = None):
        """``course_lib``: the student course_lib to give the worker (default: the release's in assignments/)."""
        sweep_stale_jobs()
        pid = os.getpid()
        # mkdtemp makes it 0700, ours alone, before anything is written into it.
        self.path = Path(tempfile.mkdtemp(prefix=f"{JOB_PREFIX}{pid}-{_process_start(pid) or 0}-",
                                          dir=jobs_folder()))
        try:
            self._fill(assignment, cells, cell_timeout, account, wall_factor, course_lib)
        except BaseException:
            self.remove()
            raise
        self.work = self.path / "work"

    def _fill(self, assignment, cells, cell_timeout, account, wall_factor, course_lib) -> None:
        from ...build import release_notebook

        self.ro = self.path / "ro"
        self.ro.mkdir(mode=0o700)
        current = release_notebook(assignment).parent / "course_lib"
        course_lib = course_lib or current
        if not (course_lib / "__init__.py").is_file():
            raise SandboxUnavailable(f"the release of {assignment} has no student-facing course_lib at {course_lib}: "
                                     f"run `course build {assignment}`")
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(course_lib, self.ro / "course_lib", ignore=ignore)
        if course_lib != current and current.is_dir():
            # An earlier release version's course_lib: today's worker may import modules added since
            # (course_lib.host, say). Only files that release lacked are added; its own stay as they were.
            for path in current.rglob("*.py"):
                target = self.ro / "course_lib" / path.relative_to(current)
                if "__pycache__" not in path.parts and not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
        shutil.copytree(WORKER_PACKAGE, self.ro / "grading_worker", ignore=ignore)
        (self.ro / "job.json").write_text(json.dumps({"cells": cells, "cell_timeout": cell_timeout,
                                                         "wall_factor": wall_factor}))
        folder_mode, file_mode = (0o750, 0o640) if account is not None else (0o700, 0o600)
        gid = account.gid if account is not None else -1
        for folder, _, files in os.walk(self.path):
            for path in (folder, *(os.path.join(folder, name) for name in files)):
                os.chown(path, -1, gid, follow_symlinks=False)
                os.chmod(path, folder_mode if path == folder else file_mode)  # copytree made no links

    def fresh_work_folder(self, account: Account | None) -> Path:
        """An empty writable folder for an unsandboxed worker, owned by the grading account."""
        shutil.rmtree(self.work, ignore_errors=True)
        self.work.mkdir(mode=0o700)
        (self.work / "tmp").mkdir(mode=0o700)
        if account is not None:
            for folder in (self.work, self.work / "tmp"):
                os.chown(folder, account.uid, account.gid)
        return self.work

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)  # rmtree never follows symbolic links


# ------------------------------------------------------------------------------ the command
def worker_command(kind: str, job: JobFolder, account: Account | None, request_fd: int, response_fd: int,
                   limits: Limits) -> list[str]:
    view = runtime_view()
    if kind == "bubblewrap":
        paths = os.pathsep.join([INSIDE_JOB, *map(str, view.package_dirs)])
        drop = [str(account.uid), str(account.gid)] if account else ["-1", "-1"]
        worker = [str(view.python), "-I", "-S", "-c", BOOTSTRAP, *drop, paths,
                  INSIDE_JOB, INSIDE_WORK, str(request_fd), str(response_fd)]
        return _bubblewrap_args(view, job, account, limits) + worker
    # Unsandboxed: the account was dropped to before exec (preexec); it must reach the interpreter.
    for path, bits in [(view.python, stat.S_IROTH | stat.S_IXOTH), *[(p, stat.S_IROTH) for p in view.packages]]:
        if not _reachable_by(account, path, bits):
            raise SandboxUnavailable(f"the grading account {account.name if account else ''} cannot read {path}: "
                                     f"install Python and the course's packages where it can, or install bubblewrap")
    paths = os.pathsep.join([str(job.ro), *map(str, view.package_dirs)])
    return [str(view.python), "-I", "-S", "-c", BOOTSTRAP, "-1", "-1", paths,
            str(job.ro), str(job.work), str(request_fd), str(response_fd)]


def _bubblewrap_args(view, job: JobFolder, account: Account | None, limits: Limits) -> list[str]:
    args = [bubblewrap(), "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try"]
    if account is None:
        args += ["--unshare-user"]  # not root: bubblewrap needs a user namespace to build the view
    clash = [p for p in (*view.binds, *view.packages) if str(p).startswith(INSIDE_ROOT)]
    if clash:
        raise SandboxUnavailable(f"{clash[0]} lies under {INSIDE_ROOT}, where the sandbox puts the job")
    # Folders bubblewrap makes on the way to a bound path would be 0700: make them traversable.
    ancestors = {parent for path in (*view.binds, *view.packages, Path(INSIDE_JOB)) for parent in path.parents}
    # Normally /tmp is a link into the job's tmpfs. When something the worker needs lives under /tmp
    # (a checkout or a virtual environment there), /tmp must be a folder to hold those mount points:
    # it becomes a tmpfs of its own, made first, and the write cap is split between the two.
    tmp_holds_binds = Path("/tmp") in ancestors
    work_bytes = limits.disk_bytes
    if tmp_holds_binds:
        work_bytes = limits.disk_bytes - limits.disk_bytes // 2
        args += ["--perms", "01777", "--size", str(limits.disk_bytes // 2), "--tmpfs", "/tmp"]
    for folder in sorted(ancestors - {Path("/"), Path("/tmp")}, key=lambda p: len(p.parts)):
        args += ["--perms", "0755", "--dir", str(folder)]
    for path in view.binds:
        args += ["--ro-bind", str(path), str(path)]
    for path in view.masks:
        args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in view.packages:
        args += ["--ro-bind", str(path), str(path)]
    for target, link in view.symlinks:
        args += ["--symlink", target, link]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--ro-bind", str(job.ro), INSIDE_JOB,
             "--perms", "0777", "--size", str(work_bytes), "--tmpfs", INSIDE_WORK,
             "--perms", "01777", "--dir", f"{INSIDE_WORK}/tmp"]
    if not tmp_holds_binds:
        args += ["--symlink", f"{INSIDE_WORK}/tmp", "/tmp"]
    args += ["--chdir", INSIDE_WORK]
    return args


def preexec(limits: Limits, cgroup: Cgroup | None, account: Account | None, drop_now: bool):
    """The child's last steps before exec: own session, the cgroup, the limits, and (unsandboxed
    mode) the grading account."""
    def apply():
        os.setsid()
        if cgroup is not None:
            cgroup.enter()
        for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_CPU, limits.cpu_seconds),
                             (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_NOFILE, limits.open_files),
                             (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(which, (value, value))
        if cgroup is None or not cgroup.caps_processes():
            # A per-account cap, shared by the account's processes on the whole machine: only a fallback.
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        if drop_now and account is not None:
            os.setgroups([])
            os.setgid(account.gid)
            os.setuid(account.uid)
    return apply


def worker_env(kind: str, job: JobFolder) -> dict:
    work = INSIDE_WORK if kind == "bubblewrap" else str(job.work)
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "TMPDIR": f"{work}/tmp", "LANG": "C.UTF-8",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "MPLBACKEND": "Agg", "MPLCONFIGDIR": f"{work}/.matplotlib", "NBGRADER_EXECUTION": "autograde",
           "PYTHONDONTWRITEBYTECODE": "1", "COURSE_LIB_DEVICE": "cpu",
           "COURSE_GRADER_WORKER": str(os.getpid())}  # whose worker it is (tests look for survivors)
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # machine settings OpenBLAS needs here
        if key in os.environ:
            env[key] = os.environ[key]
    return env


def disk_usage(folder: Path) -> int:
    """Bytes in regular files below ``folder``, not following links (unsandboxed write cap)."""
    total = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                total += info.st_blocks * 512
    return total


def scratch_files_of(account: Account | None, since: float) -> list[Path]:
    """Files the grading account made in the machine's shared temporary folders since ``since``
    (an unsandboxed worker can write there; they are removed after its grading)."""
    if account is None:
        return []
    found = []
    for shared in ("/tmp", "/var/tmp", "/dev/shm"):
        try:
            entries = list(os.scandir(shared))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid == account.uid and info.st_mtime >= since - 1:
                found.append(Path(entry.path))
    return found


