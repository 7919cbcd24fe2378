"""Validate does not freeze the student's Jupyter server (issue 39): with the students' server
extension (course_student/validate_off_loop.py, enabled by the student install) the server lists
files while nbgrader's Validate runs a slow notebook; without it, it does not. The notebook's file
is left as it was. A real Jupyter server on loopback, nbgrader's real Validate handler."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

SLEEP_S = 6
TOKEN = "validate-off-loop-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(url: str, data: bytes | None = None, timeout: float = 60) -> tuple[float, dict | list]:
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"token {TOKEN}"})
    began = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        body = json.loads(answer.read())
    return time.monotonic() - began, body


def _server(root: Path, config: Path, extension: bool) -> tuple[subprocess.Popen, str]:
    config.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"course_student.validate_off_loop": extension}}}))
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={root}", "--allow-root"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            _call(f"{url}/api/status", timeout=2)
            return server, url
        except OSError:
            time.sleep(0.3)
    server.kill()
    pytest.fail(f"the Jupyter server did not start: {server.stderr.read()[-2000:]}")


def _longest_listing_while_validating(root: Path, url: str) -> tuple[float, dict]:
    notebook = root / "slow.ipynb"
    before = notebook.stat().st_mtime_ns
    outcome = {}

    def validate():
        outcome["took"], outcome["answer"] = _call(f"{url}/assignments/validate",
                                                   json.dumps({"path": "slow.ipynb"}).encode(), timeout=120)

    thread = threading.Thread(target=validate)
    thread.start()
    time.sleep(1.5)   # the kernel has started and sleeps in the cell
    slowest = 0.0
    while thread.is_alive():
        slowest = max(slowest, _call(f"{url}/api/contents", timeout=120)[0])
        time.sleep(0.2)
    thread.join()
    assert notebook.stat().st_mtime_ns == before, "Validate wrote the notebook's file"
    return slowest, outcome


@pytest.mark.slow
@pytest.mark.parametrize("extension", [True, False], ids=["with-the-extension", "without"])
def test_the_server_answers_while_validate_runs_a_slow_notebook(tmp_path, extension):
    root = tmp_path / "home"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"import time\ntime.sleep({SLEEP_S})")])
    nbformat.write(nb, str(root / "slow.ipynb"))
    server, url = _server(root, tmp_path / "config", extension)
    try:
        slowest, outcome = _longest_listing_while_validating(root, url)
    finally:
        server.kill()
        server.wait()
    assert outcome["took"] >= SLEEP_S and outcome["answer"]["success"] is True, outcome
    if extension:
        assert slowest < 2, f"listing the files took {slowest:.1f} s while Validate ran"
    else:   # nbgrader's own handler: the control that shows the check can fail
        assert slowest > SLEEP_S / 2, f"{slowest:.1f} s"
