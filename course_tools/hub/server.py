"""Starting and stopping JupyterHub (which starts configurable-http-proxy, the grader service
and, on demand, the users' servers) on localhost, with hub/jupyterhub_config.py.

The hub runs from this environment (it needs root for LocalProcessSpawner); its output goes to
the deployment's state/jupyterhub.log. ``stop`` asks it to shut down (it stops the servers and
the proxy it started), then ends, by process id, whatever of it is left.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import HUB
from .layout import HubLayout

CONFIG = HUB / "jupyterhub_config.py"


class HubError(RuntimeError):
    """The hub cannot start; the message says what is missing and ends with the log's tail."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def require_programs() -> None:
    """The pieces the hub needs besides Python packages, with how to get each."""
    missing = []
    if not shutil.which("configurable-http-proxy"):
        missing.append("configurable-http-proxy (npm install -g configurable-http-proxy)")
    try:
        import jupyterhub  # noqa: F401
    except ImportError:
        missing.append("jupyterhub (pip install -e '.[hub]')")
    if os.geteuid() != 0:
        missing.append("root (LocalProcessSpawner starts each user's server as that user)")
    if missing:
        raise HubError("the hub needs: " + "; ".join(missing))


@dataclass
class Hub:
    layout: HubLayout
    roster: Path
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        return {**os.environ, **self.layout.env(), "COURSE_HUB_ROSTER": str(self.roster),
                "COURSE_HUB_PASSWORD": self.password, "COURSE_HUB_PORT": str(self.port),
                "COURSE_HUB_API_PORT": str(free_port()), "COURSE_HUB_PROXY_API_PORT": str(free_port()),
                "COURSE_HUB_SERVICE_PORT": str(free_port()), "COURSE_HUB_GRADING_PORT": str(free_port())}

    def start(self, timeout: float = 120) -> "Hub":
        require_programs()
        log = open(self.layout.log, "ab")
        self.process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)],
                                        cwd=self.layout.state, env=self.environment(), stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise HubError(f"jupyterhub exited with {self.process.returncode}:\n{self.log_tail()}")
            if self._ready():
                return self
            time.sleep(0.5)
        raise HubError(f"jupyterhub did not answer on {self.url} within {timeout:.0f} s:\n{self.log_tail()}")

    def _ready(self) -> bool:
        """The proxy routes to the hub, and the grader service answers."""
        try:
            with urllib.request.urlopen(f"{self.url}/hub/health", timeout=2) as response:
                if response.status != 200:
                    return False
            urllib.request.urlopen(f"{self.url}/services/{self.layout.course_id}/api/status", timeout=5)
        except urllib.error.HTTPError as err:
            return err.code in (302, 403)  # the service is up and asks for a login
        except (urllib.error.URLError, OSError):
            return False
        return True

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.layout.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 30) -> None:
        """Shut the hub down (SIGTERM: it stops the servers, the service and the proxy), then end
        any of them still running, by pid: the hub, and the proxy from its pid file."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        pid_file = self.layout.state / "jupyterhub-proxy.pid"
        try:
            pid = int(pid_file.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return
        if b"configurable-http-proxy" in cmdline:
            os.kill(pid, signal.SIGTERM)
