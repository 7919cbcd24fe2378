"""A throwaway PostgreSQL server for the tests: no packages beyond the standard library.

``PostgresServer(base).start()`` runs initdb in a fresh directory, starts the server on
127.0.0.1:<free port> (and a unix socket in that directory) with trust authentication for a
superuser named ``course``, and ``create_database(name)`` returns an SQLAlchemy URL for a new,
empty database. ``stop()`` (or leaving the ``with`` block, or the end of the process) kills the
server and removes the directory.

PostgreSQL refuses to run as root: as root, the server programs run as Debian's ``postgres``
system user (``runuser``, else ``setpriv``) in a directory under /tmp that this user owns,
because ``base`` (e.g. pytest's /tmp/pytest-of-root/...) is usually not traversable by it.
The client programs (pg_isready, createdb) run as the calling user.
"""
from __future__ import annotations

import atexit
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres")
CLIENT_PROGRAMS = ("pg_isready", "createdb")
SYSTEM_USER = "postgres"  # Debian's package creates it
SUPERUSER = "course"
START_TIMEOUT_S = 30
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes, and PostgreSQL adds "/.s.PGSQL.NNNNN"


def _has_programs(directory: Path, names=SERVER_PROGRAMS + CLIENT_PROGRAMS) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in names)


def _version_key(bin_dir: Path) -> tuple:
    """/usr/lib/postgresql/15/bin -> (15,); non-numeric versions sort first."""
    return tuple(int(part) for part in re.findall(r"\d+", bin_dir.parent.name)) or (-1,)


def find_postgres_bin() -> Path | None:
    """The directory that holds initdb, pg_ctl, postgres (and pg_isready, createdb).

    First the directory of ``initdb`` on PATH (symlinks resolved: Debian's links in
    /usr/local/bin or /usr/bin point into the versioned directory), then the newest
    /usr/lib/postgresql/*/bin. None where there is none.
    """
    on_path = shutil.which("initdb")
    if on_path:
        for candidate in (Path(on_path).parent, Path(on_path).resolve().parent):
            if _has_programs(candidate):
                return candidate
    versioned = [d for d in Path("/usr/lib/postgresql").glob("*/bin") if _has_programs(d)]
    return max(versioned, key=_version_key) if versioned else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _clean_env() -> dict:
    """The environment without PG* variables (PGDATA, PGPORT, PGHOST... must not leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    return env


class PostgresServer:
    """A throwaway PostgreSQL cluster: initdb in a temp dir, listening on 127.0.0.1:<free port>
    and a unix socket in that dir."""

    def __init__(self, base: Path | None = None, bin_dir: Path | None = None):
        self.base = Path(base) if base is not None else None
        self.bin_dir = Path(bin_dir) if bin_dir is not None else find_postgres_bin()
        self.as_root = os.geteuid() == 0
        self.host = "127.0.0.1"
        self.user = SUPERUSER
        self.port: int | None = None
        self.dir: Path | None = None  # holds data/, the socket, server.log
        self._started = False

    # ------------------------------------------------------------------ paths and commands
    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def socket_dir(self) -> Path:
        return self.dir

    @property
    def log_file(self) -> Path:
        return self.dir / "server.log"

    def _program(self, name: str) -> str:
        return str(self.bin_dir / name)

    def _as_server_user(self, argv: list[str]) -> list[str]:
        """``argv`` run as the postgres system user when we are root, else as is."""
        if not self.as_root:
            return argv
        if shutil.which("runuser"):
            return ["runuser", "-u", SYSTEM_USER, "--", *argv]
        if shutil.which("setpriv"):
            return ["setpriv", f"--reuid={SYSTEM_USER}", f"--regid={SYSTEM_USER}", "--init-groups", *argv]
        raise RuntimeError("running as root, and neither runuser nor setpriv is there to drop to "
                           f"the {SYSTEM_USER!r} user (PostgreSQL refuses to run as root)")

    def _run(self, argv: list[str], what: str, server_user: bool = False, timeout: float = 60):
        """Run a program (output to a file, never a pipe: pg_ctl leaves a daemon behind)."""
        if server_user:
            argv = self._as_server_user(argv)
        with tempfile.TemporaryFile(mode="w+") as out:
            proc = subprocess.run(argv, cwd=self.dir, env=_clean_env(), stdin=subprocess.DEVNULL,
                                  stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
            out.seek(0)
            output = out.read()
        if proc.returncode != 0:
            raise RuntimeError(f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n{output}"
                               f"{self._log_tail()}")
        return output

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return f"\n--- last lines of {self.log_file} ---\n" + "\n".join(text)

    # ------------------------------------------------------------------ life cycle
    def _make_dir(self):
        root = self.base
        if self.as_root or root is None or len(str(root)) > SOCKET_PATH_MAX - 30:
            root = Path("/tmp")  # reachable by the postgres user, and a short socket path
        root.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix="pg-", dir=root))
        if self.as_root:
            try:
                owner = pwd.getpwnam(SYSTEM_USER)
            except KeyError:
                raise RuntimeError(f"running as root, and there is no {SYSTEM_USER!r} user to run "
                                   "PostgreSQL as (it refuses to run as root)") from None
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        os.chmod(self.dir, 0o700)

    def start(self) -> "PostgresServer":
        if self._started:
            return self
        if self.bin_dir is None:
            raise RuntimeError("PostgreSQL server binaries not found; apt-get install postgresql")
        self._make_dir()
        atexit.register(self.stop)
        self._started = True
        try:
            self._run([self._program("initdb"), "-D", str(self.data_dir), "-U", self.user,
                       "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"],
                      "initdb", server_user=True)
            settings = {
                "listen_addresses": f"'{self.host}'",
                "unix_socket_directories": f"'{self.socket_dir}'",
                "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
                "max_connections": "100", "shared_buffers": "'32MB'",
            }
            with open(self.data_dir / "postgresql.conf", "a") as conf:  # appending keeps the owner
                conf.write("\n# PostgresServer (tests)\n")
                conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
            self._start_on_free_port()
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_on_free_port(self, attempts: int = 3):
        for attempt in range(attempts):
            self.port = _free_port()
            try:
                self._run([self._program("pg_ctl"), "start", "-w", "-t", str(START_TIMEOUT_S),
                           "-D", str(self.data_dir), "-l", str(self.log_file), "-o", f"-p {self.port}"],
                          "pg_ctl start", server_user=True, timeout=START_TIMEOUT_S + 10)
                return
            except RuntimeError:
                # another process took the port between _free_port() and the bind: try another
                if attempt + 1 < attempts and "already in use" in self._log_tail():
                    continue
                raise

    def _wait_until_ready(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        argv = [self._program("pg_isready"), "-q", "-h", self.host, "-p", str(self.port),
                "-U", self.user, "-d", "postgres"]
        while True:
            if subprocess.run(argv, env=_clean_env(), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL in {self.data_dir} does not accept connections on "
                                   f"{self.host}:{self.port} after {START_TIMEOUT_S} s{self._log_tail()}")
            time.sleep(0.05)

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` on this server (psycopg2 driver, TCP)."""
        return f"postgresql+psycopg2://{self.user}@{self.host}:{self.port}/{database}"

    def socket_url(self, database: str) -> str:
        """The SQLAlchemy URL of ``database`` over the server's Unix socket (no network needed: a
        process in a network namespace of its own reaches it, tests/test_service_hosts.py)."""
        return f"postgresql+psycopg2://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"

    def create_database(self, name: str) -> str:
        """Create an empty database ``name``; returns its SQLAlchemy URL."""
        if not self._started:
            raise RuntimeError("the server is not running: call start() first")
        self._run([self._program("createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user,
                   name], f"createdb {name}")
        return self.url(name)

    def stop(self):
        """Kill the server (immediate shutdown) and remove its directory. Idempotent."""
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        if (self.data_dir / "postmaster.pid").exists():
            try:
                self._run([self._program("pg_ctl"), "stop", "-w", "-m", "immediate",
                           "-D", str(self.data_dir)], "pg_ctl stop", server_user=True, timeout=30)
            except (RuntimeError, subprocess.TimeoutExpired):
                self._kill_postmaster()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _kill_postmaster(self):
        """Last resort when pg_ctl stop fails: SIGKILL the postmaster of *this* data directory."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
            if b"postgres" in Path(f"/proc/{pid}/cmdline").read_bytes():  # not a stale pid file
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            pass

    def __enter__(self) -> "PostgresServer":
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self) -> str:
        state = f"{self.host}:{self.port}, {self.dir}" if self._started else "stopped"
        return f"PostgresServer({state})"
