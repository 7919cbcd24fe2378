"""Helpers of the grading service's tests: a released course, submissions dropped into the
exchange as nbgrader's submit makes them, `course serve` as a real process, the queue's rows."""
from __future__ import annotations

import datetime
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from course_tools.cli import main as course
from course_tools.course_dir import init_course
from course_tools.demo_class import DemoClass, blank, filled_release, with_mistake
from course_tools.service.publish import feedback_folder, feedback_names
from course_tools.service.queue import Queue

ASSIGNMENT = "01_forward_ops"
COURSE_SCRIPT = str(Path(sys.executable).parent / "course")


def released_course(base: Path, db_url: str | None = None, policy: str = "") -> DemoClass:
    """A course folder with ASSIGNMENT released (no students yet); ``policy``: lines added to its
    nbgrader_config.py (c.GradingService...)."""
    demo = DemoClass(base, ASSIGNMENT, personas=[])
    folder = str(demo.course_dir)
    # course_dir.init_course is `course init` without building the student install (a wheel; 20-30 s)
    init_course(demo.course_dir, "demo", demo.exchange, db_url)
    if policy:
        with open(demo.course_dir / "nbgrader_config.py", "a") as config:
            config.write("\n" + policy + "\n")
    assert course(["release", ASSIGNMENT, "--course", folder]) == 0
    return demo


def variant(nb: nbformat.NotebookNode, tag: str) -> nbformat.NotebookNode:
    """``nb`` with one harmless code cell more: another program, so another result key (graded anew)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.cells.append(nbformat.v4.new_code_cell(f"variant_tag = {tag!r}"))
    return nb


def drop(demo: DemoClass, student: str, nb: nbformat.NotebookNode) -> str:
    """A submission in the exchange's inbound/, as nbgrader's submit writes it; its folder's name."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    name = f"{student}+{ASSIGNMENT}+{stamp}+{secrets.token_hex(4)}"
    folder = demo.exchange / "demo" / "inbound" / name
    folder.mkdir()
    nbformat.write(nb, str(folder / f"{ASSIGNMENT}.ipynb"))
    (folder / "timestamp.txt").write_text(stamp)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64))
    return name


def serve(demo: DemoClass, *args: str, wait: bool = True, timeout: int = 600):
    """`course serve` on the demo course, as its own process (and session, so that its fork
    server and grading processes can be killed with it)."""
    process = subprocess.Popen([COURSE_SCRIPT, "serve", "--course", str(demo.course_dir), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    if not wait:
        return process
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out[-3000:]
    return out


def serve_as_host(demo: DemoClass, name: str, sandbox_root: Path, log: Path, lease: int, *args: str) -> subprocess.Popen:
    """`course serve` as grading host ``name``: its own session (kill -9 of the group takes its
    whole tree), its own host name (a UTS namespace: `unshare --uts`, then `hostname`; needs
    root), its own network namespace (no network: the course's database must be reached over a
    Unix socket, PostgresServer.socket_url), its own sandbox root ($TMPDIR, where job folders are
    made) and
    COURSE_SERVICE_LEASE_SECONDS=``lease``; its output goes to ``log``."""
    env = {**os.environ, "TMPDIR": str(sandbox_root), "COURSE_SERVICE_LEASE_SECONDS": str(lease)}
    with open(log, "w") as out:
        return subprocess.Popen(["unshare", "--uts", "--net", "--", "sh", "-c", 'hostname "$0" && exec "$@"', name,
                                 COURSE_SCRIPT, "serve", "--course", str(demo.course_dir), *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def kill_9(process: subprocess.Popen) -> None:
    """kill -9 the service with everything it started (its fork server and grading process)."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def rows(demo: DemoClass, db_url: str | None = None) -> list[dict]:
    queue = Queue(db_url or f"sqlite:///{demo.course_dir}/gradebook.db")
    try:
        return queue.rows()
    finally:
        queue.close()


def wait_for(predicate, timeout: float, what: str, every: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"not within {timeout} s: {what}")


def page_of(demo: DemoClass, row: dict) -> str:
    """The feedback page published for a queue row's (one) notebook."""
    (name,) = json.loads(row["feedback_names"]).values()
    return (feedback_folder(demo.exchange, "demo") / name).read_text()


__all__ = ["ASSIGNMENT", "blank", "filled_release", "with_mistake", "feedback_names"]
