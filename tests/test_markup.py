"""A submission's markup never runs in the browser of whoever reads a page built from it.

One class, graded the real way (`course release`, `course grade` with the sandboxed hidden suites
and nbgrader's autograde, `course feedback` with nbgrader's generate_feedback and release_feedback,
`course report`, `course similarity`): ada hands in the solution, mallory the solution with
markup attacks in her written answer, in a code comment and in the message her code raises.
Formgrader's view of her submission is rendered the way
formgrader renders it (its extension's configuration, nbgrader_config.py loaded over it, its
exporter, the resources its handler passes), once as autograded and once with outputs that
carry the attacks as HTML, JavaScript, Markdown and image metadata, and a cell of nbgrader
metadata she made up.

Every page is served from a local listener and opened in Chromium: no payload may run (the
title stays, no dialog opens, no request reaches the listener's /hit/ paths, clicking the links
goes nowhere) while the written answer's heading, list, table and math (as TeX, for MathJax)
are still there.
"""
from __future__ import annotations

import datetime
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import nbformat
import pytest

from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course
from course_tools.demo_class import filled_release
from grading_support import require_sandbox
from hub_browser import chromium, missing_browser

ASSIGNMENT = "06_gradient_checking"
WRITTEN = "taylor_argument"
HEADING, ITEMS, CELL = "My derivation", ("first step", "second step"), "table cell 42"
# Inline, display and environment math, as nbconvert hands it to MathJax (it renders \\( \\) as
# Markdown's escaped parentheses, before any sanitizing).
MATH = ("$J(\\theta \\pm h) < J_{i}^{2}$", "$$\\sum_{i} a_i \\le b$$", "\\begin{equation} z_{i} > 0 \\end{equation}")
ORDINARY = (f"# {HEADING}\n\n- {ITEMS[0]}\n- {ITEMS[1]}\n\n| a | b |\n|---|---|\n| {CELL} | 2 |\n\n"
            f"Inline {MATH[0]} and display\n\n{MATH[1]}\n\nand\n\n{MATH[2]}\n\n")


def payloads(hit: str) -> str:
    """Markup that, rendered as it is, runs: each one sets the title, opens a dialog or requests
    ``hit`` + its own name from the listener."""
    return f"""
<script>document.title = "pwned"; alert("script"); fetch("{hit}script")</script>
<img src="{hit}img-src" onerror="document.title='pwned'; fetch('{hit}onerror')">
<img src=x onerror=alert(1)>
<body onload="fetch('{hit}onload')"></body>
<svg onload="fetch('{hit}svg')"><circle r="5"></circle></svg>
<iframe srcdoc="<script>parent.document.title='pwned'; fetch('{hit}srcdoc')</script>"></iframe>
<iframe src="{hit}iframe"></iframe>
<a href="javascript:fetch('{hit}javascript-link')">javascript link</a>
<a href="jav&#x09;ascript:fetch('{hit}javascript-entity')">entity link</a>
<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">data link</a>
<form action="{hit}form"><button id="send">send form</button></form>
<meta http-equiv="refresh" content="0; url={hit}refresh">
<object data="{hit}object"></object><embed src="{hit}embed">
<link rel="stylesheet" href="{hit}link"><style>body {{ background: url({hit}css) }}</style>
<div style="background: url({hit}inline-style)">styled</div>
<details open ontoggle="fetch('{hit}ontoggle')"><summary>more</summary>x</details>
<math><mtext><table><mglyph><style><img src=x onerror="fetch('{hit}mxss')"></style></mglyph></table></mtext></math>
"""


# ------------------------------------------------------------------------------ the listener
class Listener:
    """A local HTTP server: serves the pages under /page/ and counts every request to /hit/."""

    def __init__(self):
        self.pages: dict[str, bytes] = {}
        self.hits: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                if self.path.startswith("/hit/"):
                    listener.hits.append(self.path)
                body = listener.pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(body or b"")

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.hit = f"{self.base}/hit/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, name: str, html: str) -> str:
        self.pages[f"/page/{name}"] = html.encode()
        return f"{self.base}/page/{name}"


@pytest.fixture(scope="module")
def listener():
    server = Listener()
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def browser():
    missing = missing_browser()
    if missing:
        pytest.skip(f"needs {missing}")
    with chromium() as browser:
        yield browser


def open_page(browser, listener: Listener, name: str, html: str) -> tuple[object, list, list]:
    """Open ``html`` in a fresh context, click every link and button in it; the page, the
    dialogs it opened and the requests it made to /hit/."""
    for earlier in browser.contexts:  # an earlier page's timers must not count against this one
        earlier.close()
    listener.hits.clear()
    context = browser.new_context()
    page = context.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url) if "/hit/" in request.url else None)
    url = listener.serve(name, html)
    page.goto(url, wait_until="load")
    page.wait_for_timeout(500)
    for link in page.locator("a[href], button").all():
        try:
            link.click(timeout=2000, no_wait_after=True)
        except Exception:  # noqa: BLE001 - a link that is not clickable does not need clicking
            pass
        if page.url.split("#")[0] != url:
            page.goto(url, wait_until="load")
    page.wait_for_timeout(500)
    return page, dialogs, requests


def assert_nothing_ran(page, dialogs, requests, listener, title):
    assert page.title() == title
    assert dialogs == []
    assert requests == [] and listener.hits == []


def assert_markdown_and_math_survive(page):
    assert page.locator("h1", has_text=HEADING).count() >= 1
    for item in ITEMS:
        assert page.locator("li", has_text=item).count() >= 1
    assert page.locator("td", has_text=CELL).count() >= 1
    text = page.locator("body").inner_text()
    for tex in MATH:
        assert tex in text, tex
    assert "<script>" in text  # the attacks show as text: the TA sees what was written


# ------------------------------------------------------------------------------ the class
def mallory(hit: str) -> nbformat.NotebookNode:
    nb = filled_release(ASSIGNMENT)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    cells[WRITTEN].source = ORDINARY + payloads(hit)
    code = cells["gradient_check_code"]
    code.source = (f"# <img src=x onerror=\"fetch('{hit}similarity-comment')\"> {payloads(hit)}".replace("\n", " ")
                   + "\n" + code.source.replace("    x = np.array(x, dtype=np.float64)\n",
                                                f"    raise ValueError({payloads(hit)!r})\n", 1))
    assert "raise ValueError" in code.source
    return nb


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, listener):
    require_sandbox()
    base = tmp_path_factory.mktemp("markup")
    course_folder = init_course(base / "course", "markup", exchange=base / "exchange")
    folder = str(course_folder.root)
    due = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).strftime("%Y-%m-%d %H:%M UTC")
    assert course(["release", ASSIGNMENT, "--course", folder, "--due", due, "--force"]) == 0
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    for student, nb in (("ada", filled_release(ASSIGNMENT)), ("mallory", mallory(listener.hit))):
        submitted = course_folder.folder("submitted") / student / ASSIGNMENT
        submitted.mkdir(parents=True)
        nbformat.write(nb, str(submitted / f"{ASSIGNMENT}.ipynb"))
        (submitted / "timestamp.txt").write_text(stamp)
        # What nbgrader's submit leaves beside the notebook (release_feedback names the page after it).
        (submitted / "submission_secret.txt").write_text(f"secret-of-{student}")
    assert course(["grade", ASSIGNMENT, "--course", folder, "--workers", "2"]) == 0
    assert course(["feedback", ASSIGNMENT, "--course", folder]) == 0
    assert course(["report", ASSIGNMENT, "--course", folder]) == 0
    assert course(["similarity", ASSIGNMENT, "--course", folder]) == 0
    return course_folder


def formgrader_view(course_folder: Course, notebook: Path, student: str, monkeypatch) -> str:
    """The page formgrader serves for a submission: its extension's configuration with the
    course's nbgrader_config.py loaded over it (what FormgradeExtension.initialize does), its
    HTMLExporter, and the resources its SubmissionHandler passes."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader.formgrader import FormgradeExtension

    monkeypatch.chdir(course_folder.root)
    extension = FormgradeExtension()
    extension.initialize([])
    resources = {"assignment_id": ASSIGNMENT, "notebook_id": ASSIGNMENT, "submission_id": "abc", "index": 0,
                 "total": 2, "base_url": "", "student": student, "first_name": None, "last_name": None,
                 "notebook_path": f"autograded/{student}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"}
    html, _ = HTMLExporter(config=extension.config).from_filename(str(notebook), resources=resources)
    return html


# ------------------------------------------------------------------------------ the pages
def test_the_feedback_page_and_the_students_copy_run_nothing(graded_class, browser, listener):
    page_file = graded_class.folder("feedback") / "mallory" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    html = page_file.read_text()
    fetched = [p for p in (graded_class.exchange / "markup" / "feedback").glob("*.html") if p.read_text() == html]
    assert fetched, "the feedback the student fetches is the page opened here"
    page, dialogs, requests = open_page(browser, listener, "feedback.html", html)
    assert_nothing_ran(page, dialogs, requests, listener, ASSIGNMENT)
    assert_markdown_and_math_survive(page)


def test_formgraders_view_of_the_submission_runs_nothing(graded_class, browser, listener, monkeypatch):
    notebook = graded_class.folder("autograded") / "mallory" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    student = "mallory<img src=x onerror=alert(document.domain)>"  # ids come from the exchange's folder names
    html = formgrader_view(graded_class, notebook, student, monkeypatch)
    page, dialogs, requests = open_page(browser, listener, "formgrade.html", html)
    assert_nothing_ran(page, dialogs, requests, listener, ASSIGNMENT)
    assert_markdown_and_math_survive(page)


def test_formgraders_view_of_outputs_runs_nothing(graded_class, browser, listener, monkeypatch, tmp_path):
    """Outputs as a submission could carry them (nbgrader clears them when it autogrades; this
    holds whatever an instructor configures)."""
    hit = listener.hit
    nb = nbformat.read(str(graded_class.folder("autograded") / "mallory" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"),
                       as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade"))
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={"text/html": ORDINARY.replace("\n", "<br>") + payloads(hit)}),
        nbformat.v4.new_output("display_data", data={"application/javascript": f"fetch('{hit}javascript-output')"}),
        nbformat.v4.new_output("display_data", data={"text/markdown": ORDINARY + payloads(hit)}),
        nbformat.v4.new_output("display_data", data={"text/html": f"<script>fetch('{hit}isolated')</script>"},
                               metadata={"text/html": {"isolated": True}}),
        nbformat.v4.new_output("display_data", data={"image/png": png},
                               metadata={"image/png": {"width": f"1 onerror=\"fetch('{hit}width')\""},
                                         "filenames": {"image/png": f"{hit}filename"}}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": f"<svg onload=\"fetch('{hit}svg-output')\"/>"}),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": f"</script><script>fetch('{hit}widget')"}}),
    ]
    # A cell with nbgrader metadata of her own (nbgrader's autograde refuses a grade id like this
    # one; the page must not depend on that): the templates print grade ids into attributes.
    forged = nbformat.v4.new_markdown_cell("my own cell")
    forged.metadata["nbgrader"] = {"grade_id": f"x\"><img src=x onerror=\"fetch('{hit}grade-id')\">",
                                   "solution": True, "grade": True, "points": 1, "locked": False,
                                   "schema_version": 3}
    nb.cells.append(forged)
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "state": {}, "x": f"</script><script>fetch('{hit}widget-state')</script>"}}
    path = tmp_path / f"{ASSIGNMENT}.ipynb"
    nbformat.write(nb, str(path))
    html = formgrader_view(graded_class, path, "mallory", monkeypatch)
    page, dialogs, requests = open_page(browser, listener, "formgrade-outputs.html", html)
    assert_nothing_ran(page, dialogs, requests, listener, ASSIGNMENT)
    assert_markdown_and_math_survive(page)
    assert page.locator("img[src^='data:image/png;base64,']").count() >= 1  # an ordinary image still shows


def test_the_report_and_the_similarity_page_run_nothing(graded_class, browser, listener):
    reports = Path(graded_class.root) / "reports"
    report = (reports / f"{ASSIGNMENT}.html").read_text()
    assert "fetch(" in report  # mallory's message is quoted there
    page, dialogs, requests = open_page(browser, listener, "report.html", report)
    assert_nothing_ran(page, dialogs, requests, listener, f"{ASSIGNMENT} report")
    similarity = (reports / f"{ASSIGNMENT}-similarity.html").read_text()
    assert "similarity-comment" in similarity  # her code is shown side by side with ada's
    page, dialogs, requests = open_page(browser, listener, "similarity.html", similarity)
    assert_nothing_ran(page, dialogs, requests, listener, f"{ASSIGNMENT} similarity")
