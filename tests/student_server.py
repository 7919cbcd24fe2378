"""A student's own JupyterLab server, started as the course's hub starts one for them: their own
hub token (JUPYTERHUB_API_TOKEN, made by the hub: tests/deadline_hub.py), the grading service's
address (COURSE_GRADING_URL), the student install's server extension
(course_student/lab_deadlines.py) and the course's lab extensions (hub/labextensions).

The browser (or a test's plain HTTP) logs in to it with ``LabServer.token``, the server's own
login token (jupyter_server's IdentityProvider), which is not a hub token.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from course_tools.paths import ROOT
from tests.deadline_support import COURSE_ID, free_port

START_SECONDS = 180   # JupyterLab starts slowly on two busy cores


@dataclass
class LabServer:
    student: str
    process: subprocess.Popen
    url: str     # http://127.0.0.1:<port>, the server's base URL
    token: str   # the server's own login token
    log: Path    # its stderr

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5):
                    return
            except OSError:
                time.sleep(0.5)
        raise AssertionError(f"JupyterLab at {self.url} did not start in {START_SECONDS} s:\n"
                             f"{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        self.process.kill()   # nothing of theirs to keep: no kernel was started
        self.process.wait(timeout=30)


def start_lab(home: Path, student: str, hub_token: str, grading_url: str, exchange: Path) -> LabServer:
    """``student``'s JupyterLab with ``home`` as its HOME, started (not yet up: ``wait_until_up``)."""
    config = home / "config"
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"course_student.lab_deadlines": True,   # as the student install
                                               "nbgrader.server_extensions.formgrader": False}}}))
    (config / "nbgrader_config.py").write_text(
        f'c = get_config()\nc.CourseDirectory.course_id = "{COURSE_ID}"\nc.Exchange.root = "{exchange}"\n')
    port, token = free_port(), f"lab-{student}"
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(config),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "PYTHONPATH": str(ROOT),   # this checkout's course_student
           "COURSE_GRADING_URL": grading_url, "JUPYTERHUB_API_TOKEN": hub_token}
    log = home / "lab.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
             f"--LabApp.extra_labextensions_path={ROOT / 'hub' / 'labextensions'}", "--LabApp.news_url=",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    return LabServer(student, process, f"http://127.0.0.1:{port}", token, log)
