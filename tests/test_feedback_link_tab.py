"""course-feedback-link's Fetch Feedback follow-up, in real Chromium.

nbgrader's Assignments tab lists a submission as "(feedback available to fetch)", with no
(view feedback) link, when the student's copy of its page differs from the exchange's. On the hub
that happens when the grading service replaces its queue page with the graded page between a
student's Fetch Feedback and the list nbgrader shows after it: the student asked once and got no
link (the hub test met it twice under load). The extension then clicks Fetch Feedback again.

The page here is shaped as nbgrader 0.9 builds the tab (an assignment row, its button, its
submission rows), with a Fetch Feedback button whose handler answers from a script of listings;
the extension's script is loaded as it is shipped and activated as JupyterLab activates it.
The full deployment runs it too (tests/test_hub.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hub_browser import chromium, missing_browser

pytestmark = pytest.mark.skipif(missing_browser() is not None, reason=f"needs {missing_browser()}")

ENTRY = Path(__file__).resolve().parents[1] / "hub" / "labextensions" / "course-feedback-link" / "static" / "remoteEntry.js"
WHEN = "2026-12-07 14:44:29.050331 UTC"
AVAILABLE = " (feedback available to fetch)"
FETCHED = " (view feedback)"

# nbgrader's tab, reduced to what the extension reads: each Fetch Feedback takes 100 ms and then
# shows the next listing of window.listings (the last one again once they run out).
TAB = """
<div id="nbgrader-assignment-list"><div id="submitted_assignments_list"></div></div>
<script>
window.fetches = 0;
function render(listing) {
  const list = document.getElementById("submitted_assignments_list");
  list.innerHTML = "";
  const row = document.createElement("div"); row.className = "list_item row";
  const top = document.createElement("div"); top.className = "col-md-12";
  top.innerHTML = '<span class="item_name col-sm-6"><span>04_conv_backward</span></span>' +
                  '<span class="item_course col-sm-2">dlsys</span>';
  const status = document.createElement("span"); status.className = "item_status col-sm-4";
  const button = document.createElement("button"); button.innerText = "Fetch Feedback";
  button.onclick = () => {
    button.innerText = "Fetching Feedback..."; button.setAttribute("disabled", "disabled");
    setTimeout(() => { window.fetches += 1;
                       render(window.listings[Math.min(window.fetches, window.listings.length - 1)]); }, 100);
  };
  status.append(button); top.append(status); row.append(top);
  const submissions = document.createElement("div");
  const header = document.createElement("div"); header.className = "list_item row"; submissions.append(header);
  const item = document.createElement("div"); item.className = "list_item row nested_list_item";
  const cell = document.createElement("div"); cell.className = "col-md-12";
  const name = document.createElement("span"); name.className = "item_name col-sm-6";
  name.append(window.when);
  const tail = document.createElement(listing === " (view feedback)" ? "a" : "span");
  tail.innerText = listing; name.append(tail);
  cell.append(name); item.append(cell); submissions.append(item); row.append(submissions);
  list.append(row);
}
</script>
"""

ACTIVATE = """async () => {
  const container = window._JUPYTERLAB["course-feedback-link"];
  await container.init({});
  const plugins = (await container.get("./extension"))().default;
  const app = {commands: {commandExecuted: {connect: () => {}}},
               serviceManager: {serverSettings: {baseUrl: "/user/demo-ada/"}, contents: {get: async () => ({})}}};
  plugins.forEach(p => p.activate(app));
}"""


@pytest.fixture(scope="module")
def browser():
    with chromium() as started:
        yield started


def _tab(browser, listings: list[str]):
    """A page with the tab showing listings[0] and the extension active."""
    page = browser.new_page()
    page.set_content(TAB)
    page.evaluate(f"window.when = {json.dumps(WHEN)}; window.listings = {json.dumps(listings)};"
                  f"render(window.listings[0]);")
    page.add_script_tag(path=str(ENTRY))
    page.evaluate(ACTIVATE)
    return page


def _settled(page) -> tuple[int, str]:
    """Fetches made and the submission row's text once nothing has changed for a second."""
    seen = None
    for _ in range(40):
        now = (page.evaluate("window.fetches"), page.locator(".nested_list_item").inner_text())
        if now == seen:
            return now
        seen = now
        page.wait_for_timeout(500)
    raise AssertionError(f"the tab kept changing: {seen}")


def test_a_page_graded_while_it_was_fetched_is_fetched_again_once(browser):
    # Before: the queue page fetched earlier. The student's click lists the graded page as
    # available (replaced meanwhile); the extension's click fetches it.
    page = _tab(browser, [FETCHED, AVAILABLE, FETCHED])
    page.click("button:text-is('Fetch Feedback')")
    fetches, row = _settled(page)
    assert (fetches, row) == (2, WHEN + FETCHED), (fetches, row)
    page.close()


def test_a_fetch_that_keeps_failing_is_tried_again_a_bounded_number_of_times(browser):
    page = _tab(browser, [FETCHED, AVAILABLE])
    page.click("button:text-is('Fetch Feedback')")
    fetches, row = _settled(page)
    assert (fetches, row) == (3, WHEN + AVAILABLE), "the student's click and at most two more"
    page.close()


def test_feedback_released_later_waits_for_the_students_click(browser):
    # The final grading's feedback, released by the instructor: nobody asked for it in this page.
    page = _tab(browser, [AVAILABLE, FETCHED])
    page.evaluate("document.body.append(document.createElement('div'))")   # a change the extension looks at
    fetches, row = _settled(page)
    assert (fetches, row) == (0, WHEN + AVAILABLE)
    page.close()
