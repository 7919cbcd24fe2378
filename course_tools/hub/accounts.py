"""Real Unix accounts for a hub's people, made from a roster and removed again.

Each account gets its own home (mode 0700: nobody else, no student, reads it) and a user
private group. Accounts made here carry MARKER in their comment field; ``remove`` refuses to
touch an account without it, so an existing account of the same name is never taken over or
deleted. Removing an account also removes what it left in the shared temporary folders (/tmp,
/var/tmp, /dev/shm): files owned by a freed uid would otherwise belong to whoever gets that uid
next. Needs root (useradd, userdel).
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from pathlib import Path

MARKER = "course-hub account (removed by the course's hub tools)"
SHARED_TEMPORARY = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))


class AccountError(RuntimeError):
    """An account cannot be made or removed; the message says which and why."""


def _run(*args: str) -> None:
    result = subprocess.run(list(args), capture_output=True, text=True)
    if result.returncode != 0:
        raise AccountError(f"`{' '.join(args)}` failed ({result.returncode}): {result.stderr.strip()}")


def ours(name: str) -> bool:
    """Whether ``name`` is an account this module made (and so may remove)."""
    try:
        return pwd.getpwnam(name).pw_gecos == MARKER
    except KeyError:
        return False


def create(names: list[str]) -> list[pwd.struct_passwd]:
    """Make an account with a private home for each name; a name already taken (by an account
    not made here) is an error, so a real user is never reused."""
    if os.geteuid() != 0:
        raise AccountError("making Unix accounts needs root (the hub's LocalProcessSpawner does too)")
    made = []
    for name in names:
        try:
            pwd.getpwnam(name)
        except KeyError:
            pass
        else:
            if not ours(name):
                raise AccountError(f"a user {name!r} exists already and was not made by the course's hub tools: "
                                   f"rename it in the roster")
            remove([name])  # a leftover of an interrupted run: start from a clean home
        _run("useradd", "--create-home", "--user-group", "--shell", "/bin/bash", "--comment", MARKER, name)
        entry = pwd.getpwnam(name)
        os.chmod(entry.pw_dir, 0o700)
        made.append(entry)
    return made


def processes_of(uid: int) -> list[int]:
    """The pids of every process running as ``uid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def kill_processes(uid: int, timeout: float = 5.0) -> None:
    """End every process running as ``uid`` (servers and kernels of an account made here):
    SIGTERM, then SIGKILL what is left after ``timeout`` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in processes_of(uid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while processes_of(uid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not processes_of(uid):
            return


def stop_processes(name: str) -> None:
    """End every process of ``name`` if it is an account made here (others are left alone)."""
    if ours(name):
        kill_processes(pwd.getpwnam(name).pw_uid)


def remove_temporary_files(uid: int, folders=SHARED_TEMPORARY) -> list[Path]:
    """Remove everything owned by ``uid`` in ``folders``, at any depth (a file the account left in
    another account's folder too), never following a link; returns what was removed."""
    removed = []
    pending = [folder for folder in folders if folder.is_dir() and not folder.is_symlink()]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:   # a folder of another account that root may still not list (a FUSE mount)
            continue
        for entry in entries:
            try:
                owner = entry.stat(follow_symlinks=False).st_uid
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            path = Path(entry.path)
            if owner == uid:
                if is_folder:
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(path)
            elif is_folder:
                pending.append(path)
    return removed


def remove(names: list[str]) -> list[str]:
    """Remove the accounts made here among ``names`` (their processes, home and group);
    returns the names removed. Others are left alone."""
    removed = []
    for name in names:
        if not ours(name):
            continue
        uid = pwd.getpwnam(name).pw_uid
        kill_processes(uid)
        remove_temporary_files(uid)
        # userdel warns (exit 12) when there is no mail spool; the account is gone all the same.
        result = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
        if result.returncode not in (0, 12) or ours(name):
            raise AccountError(f"`userdel --remove {name}` failed ({result.returncode}): {result.stderr.strip()}")
        removed.append(name)
    return removed


def leftovers() -> list[str]:
    """Accounts made here that still exist (after an interrupted run)."""
    return sorted(entry.pw_name for entry in pwd.getpwall() if entry.pw_gecos == MARKER)
