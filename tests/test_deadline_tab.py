"""The Assignments tab shows each student their own deadline (issue 41), in real Chromium.

Two real JupyterLab servers, one per student, each as a hub would start it for them: their own
hub token (JUPYTERHUB_API_TOKEN) and the grading service's address (COURSE_GRADING_URL), the
student install's server extension (course_student/lab_deadlines.py) and the course's lab
extensions (hub/labextensions, course-deadlines among them). The grading service's real deadlines
page answers them through the stand-in hub of tests/deadline_support.py. One browser, a context
per student in a time zone of its own: ada's label shows her extended deadline, ben's the
assignment's, each in the browser's time and the course's zone. tests/test_hub.py runs the same
on a real hub.
"""
from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
import urllib.request
from zoneinfo import ZoneInfo

import pytest

from course_tools.paths import ROOT
from tests.deadline_support import (A, B, COURSE_ID, DUE_A, DUE_B, EXTENDED_A, ZONE, course_with_extension,
                                    free_port, grading_url, start_service)
from tests.hub_browser import launch, menu, missing_browser

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=f"needs {missing_browser()}")
START_SECONDS = 180   # JupyterLab starts slowly on two busy cores


def _lab(tmp_path, student: str, grading_url: str, exchange) -> tuple[subprocess.Popen, str]:
    """``student``'s JupyterLab, started; its URL with its token."""
    home = tmp_path / student
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
           "COURSE_GRADING_URL": grading_url, "JUPYTERHUB_API_TOKEN": f"tok-{student}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={home}",
         f"--LabApp.extra_labextensions_path={ROOT / 'hub' / 'labextensions'}", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=open(home / "lab.log", "wb"), start_new_session=True)
    return process, f"http://127.0.0.1:{port}"


def _wait_until_up(base: str, token: str, process: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()[-3000:]
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"JupyterLab at {base} did not start in {START_SECONDS} s:\n{log.read_text()[-3000:]}")


def _written(moment: datetime.datetime, zone: str) -> str:
    return moment.replace(tzinfo=datetime.timezone.utc).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")


def _label(deadline: datetime.datetime, browser_zone: str, extended: bool) -> str:
    return (f"Your deadline: {_written(deadline, browser_zone)} your time ({_written(deadline, ZONE)} {ZONE})"
            + (", extended" if extended else ""))


@pytest.mark.slow   # two JupyterLab servers start (in parallel, while the course is made): about 25 s on 2 busy cores
def test_each_student_sees_their_own_deadline_on_each_assignment_in_the_assignments_tab(tmp_path):
    # The servers start while the course is made (they only need the service's address to start).
    service_port = free_port()
    labs = {student: _lab(tmp_path, student, grading_url(service_port), tmp_path / "exchange")
            for student in ("ada", "ben")}
    # ada in New York (summer time from 14 March), ben in Tokyo: the browser's own zone decides "your time".
    seen = {"ada": ("America/New_York", {A: (EXTENDED_A, True), B: (DUE_B, False)}),
            "ben": ("Asia/Tokyo", {A: (DUE_A, False), B: (DUE_B, False)})}
    from playwright.sync_api import sync_playwright

    try:
        made = course_with_extension(tmp_path)
        assert made.exchange == tmp_path / "exchange"
        start_service(made, service_port)
        for student, (process, base) in labs.items():
            _wait_until_up(base, f"lab-{student}", process, tmp_path / student / "lab.log")
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                for student, (zone, expected) in seen.items():
                    context = browser.new_context(timezone_id=zone, viewport={"width": 1400, "height": 900})
                    context.set_default_timeout(120_000)
                    page = context.new_page()
                    page.goto(f"{labs[student][1]}/lab?token=lab-{student}")
                    page.wait_for_selector("#jp-main-dock-panel")
                    menu(page, "Nbgrader", "Assignment List")
                    tab = page.locator("#nbgrader-assignment-list")
                    for assignment, (deadline, extended) in expected.items():
                        label = tab.locator("#released_assignments_list .list_item", has_text=assignment).locator(
                            ".course-deadline")
                        label.wait_for()
                        assert label.text_content() == _label(deadline, zone, extended), student
                    context.close()
            finally:
                browser.close()
    finally:
        for process, _ in labs.values():
            process.kill()   # nothing of theirs to keep: no kernel was started
            process.wait(timeout=30)
