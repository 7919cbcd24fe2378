"""The sandbox: what a submission can see, as whom it runs, what it may use, and that nothing it
starts outlives its grading. Hostile submissions (tests/fixtures/hostile_submissions.py) get what
they deserve, and the machine around them is unchanged."""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import random
import socket
import stat
import sys
import sysconfig
import threading
import time
from pathlib import Path

import nbformat
import pytest

from course_tools.grading.sandbox import cgroups, bwrap as sandbox
from course_tools.grading.sandbox.runtime import distributions
from course_tools.grading.session.session import StudentSession
from course_tools.grading.suite.run import run_suite
from fixtures.hostile_submissions import HOSTILE
from grading_support import HOSTILE_LIMITS, ROOT, inject, require_sandbox, scores, source, worker_processes

require_sandbox()


class Listener:
    """A TCP server on the host's loopback that records whether anyone connected."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def machine(tmp_path):
    """Things a submission must neither read nor change: a course folder, an exchange, a root-only
    secret, a canary file; and a listener on loopback."""
    course = tmp_path / "course"
    other = course / "submitted" / "other" / "01_forward_ops"
    other.mkdir(parents=True)
    (other / "01_forward_ops.ipynb").write_text('{"other student": true}')
    (course / "gradebook.db").write_bytes(b"a gradebook")
    exchange = tmp_path / "exchange"
    inbound = exchange / "course" / "inbound" / "other+01_forward_ops+2026-01-01 00:00:00 UTC"
    inbound.mkdir(parents=True)
    (inbound / "01_forward_ops.ipynb").write_text('{"other student": true}')
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    secret = vault / "secret.txt"
    secret.write_text("SECRET")
    secret.chmod(0o600)
    canary = tmp_path / "canary.txt"
    canary.write_text("canary")
    canary.chmod(0o644)
    listener = Listener()
    yield dict(root=ROOT, course=course, exchange=exchange, secret=secret, canary=canary, port=listener.port,
               listener=listener, tmp=tmp_path)
    listener.close()


def _fill(code: str, machine: dict) -> str:
    for key in ("root", "course", "exchange", "secret", "canary", "port"):
        code = code.replace("{" + key + "}", str(machine[key]))
    return code


def _make_hostile(case, machine):
    nb = source("01_forward_ops")
    if "inject" in case:
        nb = inject(nb, _fill(case["inject"], machine))
    if "kernelspec" in case:
        nb.metadata.kernelspec = case["kernelspec"]
    if case.get("shuffle_graded_cells"):
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
        others = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]
        random.Random(0).shuffle(tests)
        nb.cells = others + tests[: len(tests) // 2] + tests[:2]  # half deleted, two duplicated, order changed
    if case.get("edit_graded_metadata"):
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and not meta.get("solution"):
                meta["points"] = 1000
                meta["grade"] = False
                cell.source = "assert True"
    return nb


def _fingerprints(folder: Path) -> dict:
    return {p: (hashlib.sha256(p.read_bytes()).hexdigest(), stat.S_IMODE(p.stat().st_mode))
            for p in folder.rglob("*") if p.is_file() and not p.is_symlink()}


@pytest.mark.parametrize("case", HOSTILE, ids=[c["name"] for c in HOSTILE])
def test_hostile_submission_gets_what_it_deserves(case, machine, tmp_path):
    watched = [machine["course"], machine["exchange"], machine["secret"].parent]
    before = {folder: _fingerprints(folder) for folder in watched}
    canary_before = (machine["canary"].read_text(), stat.S_IMODE(machine["canary"].stat().st_mode))
    path = tmp_path / "01_forward_ops.ipynb"
    if "raw_text" in case:
        path.write_text(case["raw_text"])
    elif not case.get("missing"):
        nbformat.write(_make_hostile(case, machine), str(path))
    result = run_suite("01_forward_ops", path, **{**HOSTILE_LIMITS, **case.get("limits", {})})
    got = scores(result)
    expect = case["expect"]
    if expect == "full":
        assert all(s == p for s, p in got.values()), got
    elif expect == "zero":
        assert all(s == 0 for s, _ in got.values()), got
    else:
        lost = sorted(t for t, (s, p) in got.items() if s < p)
        assert lost == sorted(expect["lose"]), got
    if "message" in case:
        text = json.dumps(result)
        assert case["message"] in text, text[:2000]
    if "variable_must_not_contain" in case:
        name, forbidden = case["variable_must_not_contain"]
        with StudentSession("01_forward_ops", path, **HOSTILE_LIMITS) as session:
            seen = json.dumps(session.variable(name))
        assert not any(word in seen for word in forbidden), seen[:1000]
    assert {folder: _fingerprints(folder) for folder in watched} == before, "the submission changed files outside"
    assert (machine["canary"].read_text(), stat.S_IMODE(machine["canary"].stat().st_mode)) == canary_before
    assert machine["listener"].connections == 0, "the submission reached the host's loopback"
    time.sleep(0.2)
    assert worker_processes() == [], "a process the submission started outlived its grading"
    assert cgroups.leftover_groups(os.getpid()) == [], "the grader left cgroups behind"


# ------------------------------------------------------------------------------ what it sees
WALK = """\
import os
seen_files, seen_dirs = [], []
for top in sorted(os.listdir('/')):
    if top in ('proc', 'dev'):
        seen_dirs.append('/' + top)
        continue
    for folder, dirs, files in os.walk('/' + top):
        seen_dirs.append(folder)
        seen_files += [os.path.join(folder, f) for f in files]
seen = {"top": sorted(os.listdir('/')), "files": seen_files, "dirs": seen_dirs}
ids = [os.getuid(), os.geteuid(), os.getgid(), open('/proc/self/uid_map').read().split()]
"""


def test_a_submission_sees_only_the_allow_list(tmp_path):
    """Every file the worker can see lies in one of the places the isolation model names; nothing
    of the repository, its history, PyTorch, the course folder or anyone's home."""
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(inject(source("01_forward_ops"), WALK), str(path))
    with StudentSession("01_forward_ops", path, **HOSTILE_LIMITS) as session:
        seen = session.variable("seen")
    stdlib = Path(sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix,
                                            "installed_base": sys.base_prefix,
                                            "installed_platbase": sys.base_exec_prefix})["stdlib"]).resolve()
    # The packages the releases import, with what they need (their distributions' own file lists).
    allowed_dists = distributions(("numpy", "matplotlib", "tqdm", "ipython"))
    assert not {"torch", "nbgrader", "course-lib", "jupyterlab", "notebook"} & set(allowed_dists)
    packages = set()
    for dist in allowed_dists.values():
        packages |= {str(Path(dist.locate_file(Path(f).parts[0])).resolve()) for f in dist.files or ()
                     if Path(f).parts and Path(f).parts[0] != ".."}
    multiarch = sysconfig.get_config_var("MULTIARCH")
    system_libraries = [f"/usr/lib/{multiarch}", f"/lib/{multiarch}", "/usr/lib64", "/lib64", "/etc/ld.so.cache"]
    allowed = ([str(stdlib), os.path.realpath(sys.executable), *system_libraries, sandbox.INSIDE_ROOT] + sorted(packages) + [str(p) for p in Path(sys.base_prefix, "lib").glob("libpython*")])
    outside = [f for f in seen["files"] if not any(f == a or f.startswith(a.rstrip("/") + "/") for a in allowed)]
    assert not outside, outside[:20]
    job = [f for f in seen["files"] if f.startswith(sandbox.INSIDE_JOB)]
    assert {Path(f).relative_to(sandbox.INSIDE_JOB).parts[0] for f in job} == {"job.json", "grading_worker", "course_lib"}
    assert set(seen["top"]) <= {"usr", "lib", "lib64", "lib32", "etc", "proc", "dev", "tmp", sandbox.INSIDE_ROOT[1:],
                                *[Path(p).parts[1] for p in allowed if p.startswith("/")]}
    everything = "\n".join(seen["files"] + seen["dirs"])
    for forbidden in ("/torch/", "/.git", f"{ROOT}/autograder", f"{ROOT}/solutions", f"{ROOT}/source",
                      f"{ROOT}/course_lib", f"{ROOT}/course_tools", "/usr/bin", "/home/", "/etc/passwd", "nbgrader"):
        assert forbidden not in everything, forbidden


def test_the_sandbox_starts_when_what_it_binds_lies_under_tmp(tmp_path):
    """A checkout or virtual environment under /tmp (pytest's tmp_path is one): /tmp must hold the
    mount points of those binds and stay writable. Once every grading failed there, because
    bubblewrap could not make /tmp a link where it had made a folder."""
    import dataclasses
    import subprocess
    import types

    from course_tools.grading.sandbox.runtime import runtime_view

    package = tmp_path / "venv" / "site-packages"
    package.mkdir(parents=True)
    (package / "marker.txt").write_text("bound")
    assert str(package).startswith("/tmp/")
    view = runtime_view()
    view = dataclasses.replace(view, packages=(*view.packages, package))
    job = types.SimpleNamespace(ro=tmp_path / "ro", work=tmp_path / "work")
    job.ro.mkdir()
    account = sandbox.grading_account() if os.geteuid() == 0 else None
    args = sandbox._bubblewrap_args(view, job, account, sandbox.Limits())
    code = (f"import os; print(open({str(package / 'marker.txt')!r}).read()); "
            "open('/tmp/scratch', 'w').write('x'); print(sorted(os.listdir('/tmp')))")
    done = subprocess.run([*args, str(view.python), "-I", "-S", "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "bound" in done.stdout and "scratch" in done.stdout
    assert not (Path("/tmp") / "scratch").exists() or (Path("/tmp") / "scratch").read_text() != "x"


def test_the_worker_never_runs_as_root(tmp_path):
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(inject(source("01_forward_ops"), WALK), str(path))
    with StudentSession("01_forward_ops", path, **HOSTILE_LIMITS) as session:
        uid, euid, gid, uid_map = session.variable("ids")
    assert 0 not in (uid, euid, gid)
    if os.geteuid() == 0:
        # No user namespace: the uid inside is the grading account's real uid outside, so the
        # machine's file permissions apply to it (a root-only file stays root-only).
        account = sandbox.grading_account()
        assert (uid, gid) == (account.uid, account.gid)
        assert uid_map == ["0", "0", "4294967295"]
        assert pwd.getpwuid(uid).pw_name == account.name


def test_files_a_submission_writes_are_capped_all_together(tmp_path, monkeypatch):
    """Its work folder and /tmp share one cap (COURSE_GRADER_DISK_MB)."""
    monkeypatch.setenv("COURSE_GRADER_DISK_MB", "8")
    code = ("import os\nwritten = 0\nfor path in ('a.bin', '/tmp/b.bin', os.path.expanduser('~/c.bin')):\n"
            "    try:\n        with open(path, 'wb') as f:\n            for _ in range(6):\n"
            "                f.write(b'x' * 2 ** 20)\n                f.flush()\n                written += 2 ** 20\n"
            "    except OSError:\n        pass\n")
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(inject(source("01_forward_ops"), code), str(path))
    with StudentSession("01_forward_ops", path, **HOSTILE_LIMITS) as session:
        written = session.variable("written")
    assert 6 * 2 ** 20 <= written <= 8 * 2 ** 20


# ------------------------------------------------------------------------------ without bubblewrap
def test_grading_without_bubblewrap_is_refused_unless_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_GRADER_NO_BWRAP", "1")
    monkeypatch.delenv("COURSE_GRADER_UNSANDBOXED", raising=False)
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(source("01_forward_ops"), str(path))
    result = run_suite("01_forward_ops", path, **HOSTILE_LIMITS)
    assert result["tasks"] == {} and "bubblewrap is not installed" in result["grading_error"]
    assert "--unsandboxed" in result["grading_error"]
    # One cause, said once: not followed by a false "no checks for the graded task ..." per task.
    assert "no checks" not in result["grading_error"], result["grading_error"]


@pytest.mark.skipif(os.geteuid() != 0 or not cgroups.Cgroup.available(), reason="unsandboxed grading needs root and cgroups")
@pytest.mark.parametrize("name", ["setsid_daemon_outlives_its_grading", "fork_bomb", "memory_bomb",
                                  "infinite_loop_in_a_cell", "os_exit"])
def test_unsandboxed_grading_still_kills_and_limits_everything(name, machine, tmp_path, monkeypatch):
    """--unsandboxed (the instructor's explicit choice): the worker runs as the grading account under
    limits and a cgroup, and every process it started is gone before the next submission."""
    monkeypatch.setenv("COURSE_GRADER_NO_BWRAP", "1")
    monkeypatch.setenv("COURSE_GRADER_UNSANDBOXED", "1")
    if not sandbox._reachable_by(sandbox.grading_account(), Path(os.path.realpath(sandbox.runtime_view().python)),
                                 stat.S_IROTH | stat.S_IXOTH):
        pytest.skip("this Python is not reachable by the grading account (it lives under a private home)")
    case = next(c for c in HOSTILE if c["name"] == name)
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(_make_hostile(case, machine), str(path))
    result = run_suite("01_forward_ops", path, **{**HOSTILE_LIMITS, **case.get("limits", {})})
    assert result["sandbox"] == "unsandboxed"
    got = scores(result)
    assert all((s == p) if case["expect"] == "full" else s == 0 for s, p in got.values()), got
    time.sleep(0.2)
    assert worker_processes() == []


def test_stale_cgroups_of_a_dead_grader_are_swept():
    """A grader killed mid-grading leaves its cgroups: the next start removes them."""
    if not cgroups.Cgroup.available():
        pytest.skip("this machine does not let the grader create cgroups")
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)  # a pid that no longer runs: a dead grader's
    stale = []
    for root in cgroups._hierarchies().values():
        folder = root / f"{cgroups.PREFIX}{pid}-0badc0de"
        folder.mkdir()
        stale.append(folder)
    assert cgroups.leftover_groups(pid)
    cgroups.Cgroup(8, 2 ** 28).remove()  # any new worker's group sweeps first
    assert cgroups.leftover_groups(pid) == [] and not any(p.exists() for p in stale)


def test_a_cgroup_kill_takes_setsid_daemons_too(tmp_path):
    """What --unsandboxed relies on (and bubblewrap mode uses too): a double-forked setsid daemon
    leaves the process group but not the cgroup, and dies with it."""
    import subprocess
    import sys

    if not cgroups.Cgroup.available():
        pytest.skip("this machine does not let the grader create cgroups")
    marker = tmp_path / "daemon.pid"
    group = cgroups.Cgroup(16, 2 ** 28)
    code = ("import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        open({str(marker)!r}, 'w').write(str(os.getpid()))\n        while True:\n            time.sleep(0.1)\n"
            "    os._exit(0)\ntime.sleep(0.5)\n")
    subprocess.run([sys.executable, "-c", code], preexec_fn=group.enter, timeout=30)
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:  # on a crowded machine the daemon
        time.sleep(0.05)                                         # may start after its parent's 0.5 s
    while not marker.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    daemon = int(marker.read_text())
    assert Path(f"/proc/{daemon}").exists(), "the daemon should outlive the process that started it"
    group.remove()
    time.sleep(0.1)
    state = Path(f"/proc/{daemon}/stat").read_text().split()[2] if Path(f"/proc/{daemon}").exists() else "gone"
    assert state in ("gone", "Z"), state
    assert cgroups.leftover_groups(os.getpid()) == []


# ------------------------------------------------------------------------------ CPU
def test_a_gradings_cgroup_caps_its_cpu(monkeypatch):
    """Each grading may use one CPU (COURSE_GRADER_CPUS): cgroup v2 cpu.max, or v1 cpu.cfs_quota_us."""
    if not cgroups.Cgroup.available():
        pytest.skip("this machine does not let the grader create cgroups")
    monkeypatch.setenv("COURSE_GRADER_CPUS", "1.5")
    limits = sandbox.Limits()
    group = cgroups.Cgroup(limits.processes, limits.cgroup_memory_bytes, limits.cpus)
    try:
        assert group.cpu_cap is not None, "neither cgroup v2's cpu.max nor v1's cpu.cfs_quota_us could be set"
        unified, cpu = group.dirs.get("unified"), cgroups._v1("cpu", group.dirs)
        if unified is not None and (unified / "cpu.max").exists():
            assert (unified / "cpu.max").read_text().split() == ["150000", "100000"]
        else:
            assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "150000"
            assert (cpu / "cpu.cfs_period_us").read_text().strip() == "100000"
        assert group.cpu_seconds() == 0.0
    finally:
        group.remove()
    assert sandbox.Limits(cpus=0).cpus == 0 and cgroups.Cgroup(8, 2 ** 28, cpus=0).cpu_cap is None


BUSY_NEIGHBOUR = ("import os\nfor _ in range(6):\n    if os.fork() == 0:\n        os.setsid()\n        while True:\n"
                  "            pass\nwhile True:\n    pass")
# Right, but slow: about 0.55 s of CPU per call; each check calls it twice (fresh and view inputs),
# about 1.1 s of CPU against the call limit of 2 s.
SLOW_BUT_RIGHT = ("from course_lib.student import implements\nfrom course_lib import ops\n"
                  "@implements(ops.Negate, 'compute')\ndef compute(self, a):\n"
                  "    for _ in range(25_000_000):\n        pass\n    return -a")


def test_a_busy_neighbour_cannot_starve_an_honest_submission(tmp_path, monkeypatch):
    """Issue 21, class 5: while another grading's submission runs busy loops in several processes,
    each under its own os.setsid() (on an autogrouping scheduler each would take a share equal to
    a whole grading's), an honest but slow submission keeps full marks under tight limits: the
    neighbour gets one CPU, and the honest one's limits count its own CPU time, not the wall
    clock that the neighbour (and the rest of this shared machine) makes run."""
    import subprocess

    # Only the CPU-time limits are under test: the wall-clock backstops get room for a machine as
    # crowded as this shared one gets (more than 15 runnable processes on 2 cores).
    monkeypatch.setenv("COURSE_GRADER_WALL_FACTOR", "20")
    hostile = tmp_path / "hostile" / "01_forward_ops.ipynb"
    hostile.parent.mkdir()
    nbformat.write(inject(source("01_forward_ops"), BUSY_NEIGHBOUR), str(hostile))
    honest = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(inject(source("01_forward_ops"), SLOW_BUT_RIGHT), str(honest))
    neighbour = subprocess.Popen([sys.executable, "-m", "course_tools.grading.suite", "01_forward_ops", str(hostile),
                                  "--json", str(tmp_path / "hostile.json")], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(worker_processes(neighbour.pid)) < 7 and time.monotonic() < deadline:
            time.sleep(0.5)  # until its busy loops run
        assert len(worker_processes(neighbour.pid)) >= 7, "the busy neighbour did not start its loops"
        result = run_suite("01_forward_ops", honest, cell_timeout=10, call_timeout=2, load_timeout=60)
        assert neighbour.poll() is None, "the neighbour's grading ended before the honest one's"
    finally:
        neighbour.kill()  # its sandbox dies with it (--die-with-parent); its cgroups are swept below
        neighbour.wait()
    time.sleep(0.5)
    cgroups.sweep_stale()
    assert worker_processes(neighbour.pid) == []
    got = scores(result)
    assert all(s == p for s, p in got.values()), (got, [c["message"] for t in result["tasks"].values()
                                                        for c in t["checks"] if not c["passed"]][:3])


def test_time_limits_count_cpu_time_with_a_wall_clock_backstop(tmp_path, monkeypatch):
    """A cell's limit is CPU time: sleeping past it costs nothing (on a crowded machine, waiting
    for a CPU is no cost of the submission either); but code that sleeps or blocks is still
    stopped, once the wall clock has run COURSE_GRADER_WALL_FACTOR times the limit."""
    monkeypatch.setenv("COURSE_GRADER_WALL_FACTOR", "3")
    code = "import time\nstarted = time.monotonic()\ntime.sleep(3)\nslept = time.monotonic() - started"
    nb = inject(inject(source("01_forward_ops"), code), "import time\ntime.sleep(600)")
    path = tmp_path / "01_forward_ops.ipynb"
    nbformat.write(nb, str(path))
    began = time.monotonic()
    with StudentSession("01_forward_ops", path, cell_timeout=2, call_timeout=5, load_timeout=60) as session:
        assert session.variable("slept") >= 3, "a sleep past the CPU-time limit was stopped"
        errors = session.loaded_cell_errors()
    assert len(errors) == 1 and "took longer than 6 s" in errors[0] and "sleeping" in errors[0], errors
    assert errors[0].startswith(f"cell {len(nb.cells)}: "), errors   # named where the student finds it: the last cell
    assert time.monotonic() - began < 120
