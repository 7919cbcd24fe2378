"""A throwaway single-node Slurm cluster for the tests: Debian's munged, slurmctld and slurmd,
started with their own key, socket, configuration, state folders and ports under one folder,
so that nothing of the machine's own Slurm (if any) is read or changed.

    with slurm_node(folder) as env:     # env: os.environ plus SLURM_CONF, for sbatch and squeue
        ...

Needs root (slurmd starts jobs as their user) and the packages slurmctld, slurmd, slurm-client
and munge; `available()` says why not, and the tests skip then (.ci/run installs them).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scancel")


def available() -> str | None:
    """None when a node can be started here; else why not."""
    if os.geteuid() != 0:
        return "a Slurm node of its own needs root (slurmd starts each job as its user)"
    missing = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name, path=os.environ.get("PATH", "") +
                                                                         ":/usr/sbin:/sbin") is None]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} missing): "
                f"apt-get install slurmctld slurmd slurm-client munge")
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _binary(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


@contextlib.contextmanager
def slurm_node(folder: Path, cpus: int = 2):
    """Start munged, slurmctld and slurmd under ``folder``; yields the environment whose
    SLURM_CONF points the Slurm commands at them; stops all three at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for name in ("munge", "ctld", "spool", "log"):
        (folder / name).mkdir(mode=0o700, exist_ok=True)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = folder / "munge" / "munge.socket"
    host = socket.gethostname()
    conf = folder / "slurm.conf"
    conf.write_text("\n".join([
        "ClusterName=coursetest", f"SlurmctldHost={host}(127.0.0.1)", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", f"AuthInfo=socket={munge_socket}", "CredType=cred/munge",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
        "SchedulerType=sched/backfill", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        f"StateSaveLocation={folder / 'ctld'}", f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}", f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={folder / 'log' / 'slurmd.log'}",
        "ReturnToService=2", "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        "SlurmctldTimeout=30", "SlurmdTimeout=30", "MinJobAge=600",
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=8000 State=UNKNOWN",
        f"PartitionName=course Nodes={host} Default=YES MaxTime=INFINITE State=UP", ""]))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    started: list[subprocess.Popen] = []
    try:
        started.append(subprocess.Popen(
            [_binary("munged"), "--foreground", "--force", f"--socket={munge_socket}", f"--key-file={key}",
             f"--log-file={folder / 'log' / 'munged.log'}", f"--pid-file={folder / 'munge' / 'munged.pid'}",
             f"--seed-file={folder / 'munge' / 'munged.seed'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        _wait(lambda: munge_socket.exists(), 15, "munged's socket", folder)
        for daemon in ("slurmctld", "slurmd"):
            started.append(subprocess.Popen([_binary(daemon), "-D", "-f", str(conf)], env=env,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            start_new_session=True))
        _wait(lambda: subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
              .stdout.strip() == "idle", 60, "the node to be idle", folder)
        yield env
    finally:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True, timeout=10)
        for process in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _wait(ready, seconds: float, what: str, folder: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.3)
    logs = "\n".join(f"{path.name}: {path.read_text()[-1500:]}" for path in sorted((folder / "log").glob("*.log")))
    raise RuntimeError(f"the test's Slurm node did not come up: no {what} within {seconds} s\n{logs}")
