"""Driving the course's JupyterHub in Chromium, the way its people do (Playwright for Python).

The browser is Debian's Chromium (/usr/bin/chromium, package ``chromium``): Playwright never
downloads one here. Each person gets a browser context of their own (their own cookies).
The helpers click what a person clicks: the login form, JupyterLab's Nbgrader menu and
Assignments tab, a cell's editor, the toolbar's Validate button, formgrader's pages.
"""
from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
# As root, without a display, and without reaching for the network (which is closed here).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
LAB_TIMEOUT_MS = 180_000   # a first login spawns a server: JupyterLab starts slowly on 2 busy cores
RUN_TIMEOUT_S = 300        # running a whole notebook, validating it (a kernel on the server)


def missing_browser() -> str | None:
    """What is missing to drive a browser, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright (pip install -e '.[hub]')"
    return None


def launch(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


@contextlib.contextmanager
def chromium():
    """Debian's Chromium under Playwright, for a test fixture; closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Person:
    """One person's browser context on the hub, and their open pages (for screenshots on failure)."""
    name: str
    context: object
    page: object
    base: str
    pages: list = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def status_of(self, path: str) -> int:
        """The HTTP status this person's browser gets for ``path`` (following redirects)."""
        return self.context.request.get(self.url(path), max_redirects=10).status


def log_in(browser, base: str, name: str, password: str) -> Person:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.goto(f"{base}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_url(re.compile(r".*/(user/[^/]+/lab|hub/home|hub/spawn-pending).*"), timeout=LAB_TIMEOUT_MS)
    return Person(name, context, page, base, [page])


# ---------------------------------------------------------------------------------- JupyterLab
def wait_for_lab(page) -> None:
    page.wait_for_selector("#jp-main-dock-panel", timeout=LAB_TIMEOUT_MS)
    page.wait_for_selector(".jp-LauncherCard, .jp-NotebookPanel", timeout=LAB_TIMEOUT_MS)


def menu(page, top: str, item: str) -> None:
    page.click(f".lm-MenuBar-itemLabel:text-is('{top}')")
    page.click(f".lm-Menu-itemLabel:text-is('{item}')")


def assignments_tab(page):
    """The Assignments tab (Nbgrader > Assignment List), loaded."""
    if not page.locator("#nbgrader-assignment-list").is_visible():
        menu(page, "Nbgrader", "Assignment List")
    tab = page.locator("#nbgrader-assignment-list")
    tab.locator("#refresh_assignments_list").click()
    page.wait_for_selector("#released_assignments_list_loading[hidden]", state="attached")
    return tab


def fetch(page, assignment: str) -> None:
    tab = assignments_tab(page)
    tab.locator("#released_assignments_list .list_item", has_text=assignment).locator("button:text-is('Fetch')").click()
    tab.locator("#fetched_assignments_list .list_item", has_text=assignment).first.wait_for()


def open_notebook(page, course_id: str, assignment: str):
    """Open the fetched notebook from the Assignments tab; returns the notebook panel."""
    tab = assignments_tab(page)
    tab.locator(f"#fetched_assignments_list a[href='#nbgrader-{course_id}-{assignment}']").click()
    tab.locator(f"#nbgrader-{course_id}-{assignment} .nested_list_item a", has_text=assignment).click()
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.locator(".jp-Cell").first.wait_for(timeout=LAB_TIMEOUT_MS)
    kernel_idle(page, panel)
    return panel


def cell(panel, index: int):
    return panel.locator(".jp-Notebook .jp-Cell").nth(index)


def replace_cell_source(page, panel, index: int, text: str) -> None:
    """Select everything in cell ``index``'s editor and put ``text`` in its place, as a paste
    would (typed key by key, the editor would add its own indentation and closing brackets)."""
    target = cell(panel, index)
    target.scroll_into_view_if_needed()
    if "jp-MarkdownCell" in (target.get_attribute("class") or "") and not target.locator(".cm-content").is_visible():
        target.dblclick()  # a rendered Markdown cell opens its editor on a double click
    target.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    page.keyboard.press("Escape")


def kernel_idle(page, panel, timeout: float = RUN_TIMEOUT_S) -> None:
    """Wait until no cell is queued or running and the kernel says it is idle."""
    deadline, calm = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        # On a busy machine JupyterLab may ask which kernel to use although the session has one
        # (seen on 2 loaded cores): take the one it offers, as a student would.
        chooser = page.locator(".jp-Dialog", has_text="Select Kernel")
        if chooser.count() and chooser.first.is_visible():
            chooser.locator("button", has_text="Select").first.click()
        busy = panel.locator(".jp-InputPrompt:has-text('[*]')").count()
        status = panel.locator(".jp-Notebook-ExecutionIndicator").get_attribute("data-status") or ""
        idle = page.locator(".jp-NotebookPanel-toolbar :text('Kernel status: Idle')").count() or status == "idle"
        calm = calm + 1 if not busy and idle else 0
        if calm >= 3:
            return
        time.sleep(0.5)
    raise TimeoutError(f"the notebook's kernel was still busy after {timeout:.0f} s")


def run_all(page, panel) -> None:
    menu(page, "Run", "Run All Cells")
    time.sleep(1)
    kernel_idle(page, panel)


def save(page, panel, on_disk: Path) -> None:
    """Ctrl+S, and wait until the file on disk (``on_disk``, read as root) is the saved one: a save
    still in flight when Validate saves again makes JupyterLab ask "File Changed"."""
    before = on_disk.stat().st_mtime_ns
    panel.locator(".jp-Notebook").click(position={"x": 2, "y": 2})
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while on_disk.stat().st_mtime_ns == before and time.monotonic() < deadline:
        time.sleep(0.2)
    page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").wait_for(state="detached", timeout=30_000)
    if on_disk.stat().st_mtime_ns == before:
        raise TimeoutError(f"saving {on_disk.name} did not reach the disk")


def validate(page, panel) -> tuple[str, str]:
    """Press the notebook's Validate button; returns (the result's class, the dialog's text) and
    closes the dialog. Classes: validation-success, validation-failed, validation-passed, ..."""
    panel.locator(".jp-Toolbar-item", has_text="Validate").click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=RUN_TIMEOUT_S * 1000)
    body = dialog.locator("[class*='validation-']").first
    body.wait_for(timeout=RUN_TIMEOUT_S * 1000)
    kind = next(c for c in body.get_attribute("class").split() if c.startswith("validation-"))
    text = dialog.inner_text()
    return kind, text


def close_dialog(page) -> None:
    page.locator(".jp-Dialog button", has_text="Ok").click()
    page.locator(".jp-Dialog").wait_for(state="detached")


def submit(page, assignment: str) -> None:
    tab = assignments_tab(page)
    tab.locator("#fetched_assignments_list .list_item", has_text=assignment).first.locator(
        "button:text-is('Submit')").click()
    tab.locator("#submitted_assignments_list .list_item", has_text=assignment).first.wait_for(timeout=60_000)


def fetch_feedback(page, assignment: str) -> None:
    """Click Fetch Feedback and wait for nbgrader's answer (a lost click fails here, by name);
    open_feedback then waits for the link of the submission it wants."""
    tab = assignments_tab(page)
    row = tab.locator("#submitted_assignments_list .list_item", has_text=assignment).first
    with page.expect_response(lambda r: r.request.method == "POST" and "/assignments/fetch_feedback" in r.url,
                              timeout=60_000):
        row.locator("button", has_text="Fetch Feedback").click()


def open_feedback(page, assignment: str, timestamp: str | None = None):
    """Click (view feedback) of the submission made at ``timestamp`` (as nbgrader names it; None:
    the first listed): the file browser goes to its feedback folder, and the page opens in a
    browser tab of its own (hub/labextensions/course-feedback-link). Returns that tab, loaded."""
    tab = assignments_tab(page)
    where = tab.locator("#submitted_assignments_list")
    if timestamp is not None:
        where = where.locator(".nested_list_item", has_text=timestamp)
    link = where.locator("a", has_text="view feedback").first
    try:
        link.wait_for(timeout=60_000)
    except Exception as error:   # Playwright's TimeoutError: say what the tab showed instead
        listed = tab.locator("#submitted_assignments_list").inner_text()
        raise AssertionError(f"no (view feedback) link on the submission of {timestamp} in 60 s; "
                             f"the tab lists: {listed!r}") from error
    with page.context.expect_page() as opened:
        link.click()
    feedback = opened.value
    feedback.wait_for_load_state()
    assert feedback.url.split("?")[0].endswith(f"/{assignment}.html"), feedback.url
    return feedback


# ---------------------------------------------------------------------------------- the grader service
def open_terminal(page):
    page.locator(".jp-LauncherCard", has_text="Terminal").first.click()
    terminal = page.locator(".jp-Terminal:visible")
    terminal.wait_for()
    time.sleep(2)  # the shell's prompt
    terminal.click()
    return terminal


def new_terminal(page):
    """File > New > Terminal (where the launcher is behind open notebooks), focused."""
    page.click(".lm-MenuBar-itemLabel:text-is('File')")
    page.hover(".lm-Menu-itemLabel:text-is('New')")  # its submenu opens on hover
    page.click(".lm-Menu-itemLabel:text-is('Terminal')")
    terminal = page.locator(".jp-Terminal:visible")
    terminal.wait_for()
    time.sleep(2)  # the shell's prompt
    terminal.click()
    return terminal


def formgrader_row(page, assignment: str):
    page.locator("#main-table tr", has_text=assignment).first.wait_for()
    return page.locator("#main-table tr", has_text=assignment).first


def save_screenshots(people: list[Person], folder: Path) -> list[Path]:
    """A screenshot of every page still open, named after its person (on failure)."""
    folder.mkdir(parents=True, exist_ok=True)
    saved = []
    for person in people:
        for number, page in enumerate(person.context.pages):
            path = folder / f"{person.name}-{number}.png"
            try:
                page.screenshot(path=str(path), full_page=False, timeout=10_000)
                saved.append(path)
            except Exception:  # noqa: BLE001 - a page that cannot be shot must not hide the real failure
                continue
    return saved

