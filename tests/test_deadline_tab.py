"""The Assignments tab shows each student their own deadline (issue 41), in real Chromium.

Two real JupyterLab servers, one per student, each as a hub would start it for them
(tests/student_server.py): their own hub token, made by a real JupyterHub in this process
(tests/deadline_hub.py), the grading service's address, the student install's server extension
(course_student/lab_deadlines.py) and the course's lab extensions (hub/labextensions,
course-deadlines among them). The grading service's real deadlines page checks each server's token
with jupyterhub's HubAuth against that hub. One browser, a context per student in a time zone of
its own: ada's label shows her extended deadline, ben's the assignment's, each in the browser's
time and the course's zone.
"""
from __future__ import annotations

import datetime
from zoneinfo import ZoneInfo

import pytest

from tests.deadline_hub import real_hub
from tests.deadline_support import A, B, DUE_A, DUE_B, EXTENDED_A, ZONE, course_with_extension
from tests.hub_browser import assignments_tab, launch, menu, missing_browser
from tests.student_server import start_lab

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=f"needs {missing_browser()}")


def _written(moment: datetime.datetime, zone: str) -> str:
    return moment.replace(tzinfo=datetime.timezone.utc).astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")


def _label(deadline: datetime.datetime, browser_zone: str, extended: bool) -> str:
    return (f"Your deadline: {_written(deadline, browser_zone)} your time ({_written(deadline, ZONE)} {ZONE})"
            + (", extended" if extended else ""))


# Counts every animation frame (drawn or about to be) until window.watching is false, and those
# that showed an assignment row without its label.
WATCH_FRAMES = """() => {
  const rows = () => document.querySelectorAll(
    "#released_assignments_list > .list_item, #fetched_assignments_list > .list_item, #submitted_assignments_list > .list_item");
  window.watching = true; window.frames_seen = [0, 0];
  const frame = () => { window.frames_seen[0] += 1;
                        if ([...rows()].some(r => !r.querySelector(".course-deadline"))) window.frames_seen[1] += 1;
                        if (window.watching) requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
}"""


def _frames_with_a_row_unlabelled(page) -> int:
    """Refresh the Assignments tab three times; the frames drawn with an assignment row and no label."""
    page.evaluate(WATCH_FRAMES)
    for _ in range(3):
        assignments_tab(page)   # its refresh button, and the lists loaded again
        page.wait_for_timeout(500)
    frames, bare = page.evaluate("() => { window.watching = false; return window.frames_seen; }")
    assert frames > 10, f"only {frames} animation frames seen: the check would see nothing"
    return bare


@pytest.mark.slow   # two JupyterLab servers start (in parallel, while the course is made): about 25 s on 2 busy cores
def test_each_student_sees_their_own_deadline_on_each_assignment_in_the_assignments_tab(tmp_path):
    # ada in New York (summer time from 14 March), ben in Tokyo: the browser's own zone decides "your time".
    seen = {"ada": ("America/New_York", {A: (EXTENDED_A, True), B: (DUE_B, False)}),
            "ben": ("Asia/Tokyo", {A: (DUE_A, False), B: (DUE_B, False)})}
    from playwright.sync_api import sync_playwright

    with real_hub(tmp_path / "hub") as hub:
        # The servers start while the course is made (they need only their token and the service's address).
        labs = {student: start_lab(tmp_path / student, student, hub.tokens[student], hub.grading_url,
                                   tmp_path / "exchange") for student in seen}
        try:
            made = course_with_extension(tmp_path)
            assert made.exchange == tmp_path / "exchange"
            hub.serve(made)
            for lab in labs.values():
                lab.wait_until_up()
            with sync_playwright() as playwright:
                browser = launch(playwright)
                try:
                    for student, (zone, expected) in seen.items():
                        context = browser.new_context(timezone_id=zone, viewport={"width": 1400, "height": 900})
                        context.set_default_timeout(120_000)
                        page = context.new_page()
                        asked = []   # the extension's questions to the student's server
                        page.on("request", lambda r, asked=asked: asked.append(r.url)
                                if r.url.split("?")[0].endswith("/course/deadlines") else None)
                        page.goto(f"{labs[student].url}/lab?token={labs[student].token}")
                        page.wait_for_selector("#jp-main-dock-panel")
                        menu(page, "Nbgrader", "Assignment List")
                        tab = page.locator("#nbgrader-assignment-list")
                        for assignment, (deadline, extended) in expected.items():
                            label = tab.locator("#released_assignments_list .list_item", has_text=assignment).locator(
                                ".course-deadline")
                            label.wait_for()
                            assert label.text_content() == _label(deadline, zone, extended), student
                        before = len(asked)
                        assert not _frames_with_a_row_unlabelled(page), \
                            f"{student}: rows were drawn before their label (the label then moves every row below it)"
                        assert len(asked) == before, f"{student}: asked again within a minute: {asked}"
                        # A minute on (the page's clock moved), a refresh asks again: an extension
                        # granted meanwhile shows without reloading the page.
                        with page.expect_request(lambda r: r.url.split("?")[0].endswith("/course/deadlines"),
                                                 timeout=30_000):
                            page.evaluate("Date.now = (now => () => now() + 65000)(Date.now)")
                            page.click("#refresh_assignments_list")
                        context.close()
                finally:
                    browser.close()
        finally:
            for lab in labs.values():
                lab.stop()
