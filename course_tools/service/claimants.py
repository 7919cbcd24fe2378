"""Who claimed a queue row or registered a host: a process named by host, pid, the pid's start
time and a random part (``claimant()``), and whether such a process is known to have ended
(``known_dead``: a process of this machine that no longer runs; another machine's only its lease
can tell). queue.py, heartbeat.py and hosts.py decide from these."""
from __future__ import annotations

import os
import socket
import uuid


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat's 22nd field), None
    when no such process runs (or /proc cannot tell). A pid is reused; a pid and its start time
    name one process for the machine's uptime."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read(4096).decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()   # the name, in parentheses, may hold anything
    return fields[19] if len(fields) > 19 else None


def claimant() -> str:
    """This process's name in ``claimed_by``: host, pid, the pid's start time and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{_started(os.getpid()) or '-'}:{uuid.uuid4().hex[:8]}"


def _alive(claimed_by: str, me: str) -> bool | None:
    """Whether a claimant still runs: False when it is known dead (its pid runs no process, or a
    process that started at another time than the claimant: a pid reused, by a student's fork
    loop say), None when only its lease can tell (another machine's, or no start time to
    compare), True for this process."""
    if claimed_by == me:
        return True
    try:
        host, pid, started, _ = claimed_by.split(":")
        pid = int(pid)
    except ValueError:
        return False
    if host != socket.gethostname():
        return None
    if pid == os.getpid():
        return False   # our pid, another claimant: a dead predecessor whose pid we got
    now = _started(pid)
    if now is None:
        return False if not os.path.exists(f"/proc/{pid}") else None
    return None if started == "-" else now == started


def known_dead(claimed_by: str, me: str) -> bool:
    """Whether a claimant is known not to run (a process of this machine that ended); a live
    one, or another machine's, is not (only its lease can tell)."""
    return _alive(claimed_by, me) is False
