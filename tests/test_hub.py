"""The course on a real JupyterHub, used in a real browser (`make hub-test`; part of `make test`).

A real JupyterHub with configurable-http-proxy and hub/jupyterhub_config.py, real Unix accounts
from hub/roster.csv, real nbgrader, Debian's Chromium driven by Playwright. One scenario:

 1. The instructor opens a terminal in the course's grader service, runs `course release
    04_conv_backward`, and sees it released in formgrader's Manage Assignments.
 2. Three students, each in their own browser, fetch 04 in the Assignments tab, open it, put code
    into the solution cells through the editor (ada and cleo: the unflipped-kernel mistake; ben:
    nothing), run all cells, press Validate (the dialog's verdict is checked), and submit from
    the Assignments tab. Feedback before the deadline (the grading service, `course serve`, with
    the course's policy lowered to 2 graded attempts a day): within 60 s of each Submit ada's
    Fetch Feedback brings a page that names her mistake; she fixes it (Validate passes),
    resubmits, and every check passes; her third, changed submission is past the day's limit and
    its page says when the next graded attempt is. Ben's Fetch Feedback brings his own page only.
 3. The TA collects and autogrades in formgrader (the hidden suites, in the sandbox, as the
    grader account), sees the students' names from the roster, grades the written derivation by hand with points and a comment, and
    generates and releases feedback.
 4. Each student fetches the feedback and opens it: its scores are the gradebook's, and it holds
    no line of the hidden suites.
 5. Isolation: a student's browser is refused the course service, formgrader and another
    student's server and files; a cell in the student's own notebook cannot read the hidden
    suites, solutions, sources, gradebook or other students' work and feedback (fetched, or in the
    exchange's feedback folder, which it cannot list), nor import the grader's code, nor anything
    of the checkout the hub was started from.
 6. The student's own terminal (a login shell): `course check` is on its PATH and reports the
    tasks; reading the checkout's hidden suites and the gradebook is refused.
 7. A fix in the middle of the semester: the instructor corrects the released notebook in a copy
    of the bundle, puts it into the running hub (`make hub-update`: the bundle swapped in, the
    course's services started again) and releases v2 in the course's terminal; the exchange
    hands out v2, and the course folder keeps v1.
 8. The hub stops (its own test, also run when the scenario fails): nothing under its root is
    left to a uid or gid of the accounts it removed, nor the login shells' PATH snippet.

Started from a checkout every account can read (a fresh clone is 0755), the hub refuses to start
and names the chmod that closes it; the test checks that, runs the chmod as an instructor would,
and gives the checkout its mode back at the end.

It needs root, configurable-http-proxy, JupyterHub and Playwright (the `hub` extra), Debian's
chromium and bubblewrap; without them it is skipped, and with COURSE_REQUIRE_HUB=1 (CI) it fails.
On failure it saves a screenshot of every open page and the hub's log in hub-test-failure/.
With COURSE_HUB_SCREENSHOTS=DIR it also writes the README's screenshots there (`make hub-screenshots`).
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shlex
import shutil
import time
import urllib.parse
import warnings
from pathlib import Path

import nbformat
import pytest

import hub_browser as hb
import refusals
from conftest import given_lines, hidden_code_lines
from course_tools.build import release_notebook
from course_tools.grading.suite.run import graded_tasks
from course_tools.demo_class import blank, filled_release, with_mistake

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "04_conv_backward"
FAILURES = ROOT / "hub-test-failure"
REQUIRE = os.environ.get("COURSE_REQUIRE_HUB", "") == "1"
# What each student types first (ada then fixes her mistake from the grading service's feedback).
PERSONAS = {"demo-ada": with_mistake, "demo-cleo": with_mistake, "demo-ben": blank}
# The test course's policy for feedback before the deadline: a low daily limit, reached cheaply.
ATTEMPTS_PER_DAY = 2
POLICY = f'c.GradingService.assignments = {{"{ASSIGNMENT}": {{"attempts_per_day": {ATTEMPTS_PER_DAY}}}}}\n'
SERVICE_FEEDBACK_S = 60   # from Submit to the grading service's feedback, fetched in the tab
DERIVATION = ("By the chain rule, each input element receives the output gradient times every kernel weight it "
              "met: dA is the full convolution of dZ with the kernel rotated by 180 degrees, and dW is the "
              "cross-correlation of the input with dZ.")
FOUND_BUGS = ("1. The upsampling returns dZ unchanged: it must put stride - 1 zeros between its entries. "
              "2. The padding is K - 1 whatever the forward padding was: it must be K - 1 - p. "
              "3. The transposed kernel is allocated with the forward kernel's shape: C_in and C_out swap. "
              "4. The second convolution keeps the forward stride: it must have stride 1.")
# The written (manually graded) cells a MANUAL student answers; an unanswered one fails Validate.
WRITTEN = {"conv_derivation": DERIVATION, "conv_find_bugs": FOUND_BUGS}
# As formgrader shows the roster's names (hub/roster.csv): "last, first".
SHOWN_NAMES = {"demo-ada": "Lovelace, Ada", "demo-ben": "Bitdiddle, Ben", "demo-cleo": "Hacker, Cleo"}
MANUAL = {"demo-ada": (5, "Clear; say why the kernel is rotated."), "demo-cleo": (3, "The rotation is missing.")}

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _missing() -> list[str]:
    from course_tools.hub.envs import EnvError, base_python
    from course_tools.hub.server import HubError, require_programs

    missing = []
    try:
        require_programs()
    except HubError as err:
        missing.append(str(err))
    browser = hb.missing_browser()
    if browser:
        missing.append(browser)
    if not shutil.which("bwrap"):
        missing.append("bubblewrap (apt-get install bubblewrap): grading runs in its sandbox")
    try:
        base_python()
    except EnvError as err:
        missing.append(str(err))
    return missing


class HubRun:
    """This module's hub: started from this checkout as an instructor would start it, stopped by
    the last test (or when the module ends, whatever happened); the ids of the accounts it made."""

    def __init__(self, stack: contextlib.ExitStack):
        from course_tools.hub.layout import HubLayout

        self.stack, self.layout = stack, HubLayout()
        self.hub = None
        self.ids: dict[str, tuple[int, int]] = {}

    def start(self):
        from course_tools import access
        from course_tools.hub import roster as rosters
        from course_tools.hub.server import HubError
        from course_tools.hub.session import running_hub

        if access.exposures({ROOT: "this checkout"}, [access.OTHERS]):  # a fresh clone: 0755
            with pytest.raises(HubError) as refused:
                with running_hub(self.layout):
                    pass
            message = str(refused.value)
            assert ROOT in [path for _, path in refusals.fixes(message)] and "demo-ada" in message, message
            self.stack.enter_context(refusals.done_as_told(message))  # the mode comes back after the stop
        self.hub = self.stack.enter_context(running_hub(self.layout))
        for name in [self.layout.grader_account, *rosters.load().names()]:
            entry = pwd.getpwnam(name)
            self.ids[name] = (entry.pw_uid, entry.pw_gid)
        return self

    def stop(self) -> None:
        self.stack.close()


@pytest.fixture(scope="module")
def hub_run():
    missing = _missing()
    if missing:
        message = "the hub test needs " + "; ".join(missing)
        pytest.fail(message + " (COURSE_REQUIRE_HUB=1)") if REQUIRE else pytest.skip(message)
    with contextlib.ExitStack() as stack:
        yield HubRun(stack).start()


@pytest.fixture(scope="module")
def hub(hub_run):
    return hub_run.hub


@pytest.fixture
def browser(hub):
    with hb.chromium() as chromium:
        yield chromium


def _gradebook(layout):
    from nbgrader.api import Gradebook

    warnings.filterwarnings("ignore", module=r"nbgrader\..*")
    return Gradebook(f"sqlite:///{layout.course_folder / 'gradebook.db'}", course_id=layout.course_id)


def _scores(layout, student: str) -> dict[str, float]:
    with _gradebook(layout) as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, student)
        return {g.name: round(float(g.score), 2) for nb in submission.notebooks for g in nb.grades} | {
            "total": round(float(submission.score), 2)}


def _shot(page, name: str) -> None:
    """A screenshot for the README, when asked for (COURSE_HUB_SCREENSHOTS=DIR)."""
    folder = os.environ.get("COURSE_HUB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.wait_for_timeout(1500)  # JupyterLab paints cells scrolled into view a moment later
        page.screenshot(path=str(Path(folder) / f"hub-{name}.png"))


# ---------------------------------------------------------------------------------- the scenario
def test_a_course_on_the_hub_used_in_a_browser(hub, browser):
    people: list[hb.Person] = []
    started = time.monotonic()
    try:
        instructor = hb.log_in(browser, hub.url, "demo-instructor", hub.password)
        people.append(instructor)
        release_from_the_service_terminal(hub, instructor)
        set_the_policy(hub)
        students = {}
        for name in PERSONAS:
            students[name] = hb.log_in(browser, hub.url, name, hub.password)
            people.append(students[name])
            do_the_assignment(hub, students[name], PERSONAS[name](ASSIGNMENT))
        assert any(FOUND_THE_QUEUE_PAGE), (f"no fetch of the service's feedback found the queue's page first "
                                           f"({FOUND_THE_QUEUE_PAGE}): feedback in one round was not shown")
        ta = hb.log_in(browser, hub.url, "demo-ta", hub.password)
        people.append(ta)
        grade_in_formgrader(hub, ta)
        for name, student in students.items():
            read_the_feedback(hub, student)
        isolation(hub, students["demo-ada"], ta)
        in_a_students_terminal(hub, students["demo-ada"])
        fix_the_release_on_the_running_hub(hub, instructor)
    except BaseException:
        FAILURES.mkdir(exist_ok=True)
        hb.save_screenshots(people, FAILURES)
        shutil.copy(hub.layout.log, FAILURES / "jupyterhub.log")
        print(f"screenshots and the hub's log: {FAILURES}")
        raise
    print(f"the hub scenario took {time.monotonic() - started:.0f} s")


def release_from_the_service_terminal(hub, instructor: hb.Person) -> None:
    from course_tools.course_dir import Course
    from course_tools.sections import all_sections

    # The hub's course folder has the roster's sections (`course extend --section` reaches them).
    assert all_sections(Course(hub.layout.course_folder)) == {"lab-a": ["demo-ada", "demo-cleo"], "lab-b": ["demo-ben"]}
    course = hub.layout.course_id
    page = instructor.page
    page.goto(instructor.url(f"/services/{course}/lab"))
    hb.wait_for_lab(page)
    hb.open_terminal(page)
    page.keyboard.type(f"course release {ASSIGNMENT}\n")
    outbound = hub.layout.exchange / course / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    deadline = time.monotonic() + 120
    while not outbound.exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert outbound.exists(), "`course release` in the service's terminal released nothing"
    formgrader = instructor.context.new_page()
    formgrader.goto(instructor.url(f"/services/{course}/formgrader"))
    row = hb.formgrader_row(formgrader, ASSIGNMENT)
    assert row.locator("td.status").inner_text().strip() == "released"
    assert hb.formgrader_row(formgrader, "05_pooling_backward").locator("td.status").inner_text().strip() == "draft"
    formgrader_links_open_the_folders(hub, formgrader)


def formgrader_links_open_the_folders(hub, formgrader) -> None:
    """formgrader in a tab of its own: the assignment's name opens its source folder, Preview its
    release folder, in the service's file browser (course init links source/ and release/ into
    the course folder; course_tools/hub/formgrader_pages.py puts the service's URL in front)."""
    course, row = hub.layout.course_id, hb.formgrader_row(formgrader, ASSIGNMENT)
    for cell, folder in (("td.name a", "source"), ("td.preview a", "release")):
        with formgrader.context.expect_page() as opened:
            row.locator(cell).click()
        tab = opened.value
        tab.wait_for_load_state()
        assert tab.url.endswith(f"/services/{course}/tree/{course}/{folder}/{ASSIGNMENT}"), (cell, tab.url)
        tab.locator(".jp-DirListing-item", has_text=f"{ASSIGNMENT}.ipynb").first.wait_for()
        tab.close()


def _math_typeset(page, where: str) -> None:
    """MathJax has typeset the page's TeX (it comes from the server itself, course_tools/mathjax.py):
    its output elements are there and the notebook's matrices are no longer TeX source."""
    page.locator(".MathJax").first.wait_for(state="attached", timeout=60_000)
    count = page.locator(".MathJax").count()
    assert count >= 5, f"only {count} formulas typeset in {where}"
    # The worked example's matrices (section 3 of the notebook), raw TeX until typeset.
    assert "begin{bmatrix}" not in page.locator("body").inner_text(), f"raw TeX left in {where}"


def do_the_assignment(hub, student: hb.Person, answers: nbformat.NotebookNode) -> None:
    page = student.page
    hb.wait_for_lab(page)
    hb.fetch(page, ASSIGNMENT)
    if student.name == "demo-ada":
        _shot(page, "assignments-tab")
    panel = hb.open_notebook(page, hub.layout.course_id, ASSIGNMENT)
    release = nbformat.read(str(release_notebook(ASSIGNMENT)), as_version=4)
    typed = 0
    for index, (given, answer) in enumerate(zip(release.cells, answers.cells)):
        if given.cell_type == "code" and given.metadata.get("nbgrader", {}).get("solution") \
                and answer.source != given.source:
            hb.replace_cell_source(page, panel, index, answer.source)
            typed += 1
    if student.name in MANUAL:  # the written answers, in the student's own words
        for grade_id, words in WRITTEN.items():
            written = next(i for i, c in enumerate(release.cells)
                           if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
            hb.replace_cell_source(page, panel, written, words)
    hb.run_all(page, panel)
    hb.save(page, panel, Path('/home') / student.name / ASSIGNMENT / f'{ASSIGNMENT}.ipynb')
    check = next(i for i, c in enumerate(release.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "conv_backward")
    outputs = hb.cell(panel, check).locator(".jp-OutputArea").text_content()
    if student.name == "demo-cleo":
        assert "Error" in outputs, f"the unflipped kernel passed the visible conv_backward check: {outputs}"
        hb.cell(panel, check).locator(".jp-OutputArea").scroll_into_view_if_needed()
        _shot(page, "failing-check")
    kind, text = hb.validate(page, panel)
    failed = text.count("The following cell failed")
    if PERSONAS[student.name] is with_mistake:
        # Six code answers: the worked example, the loops, im2col, Conv.gradient, the fixed listing, nn.Conv.
        assert typed == 6 and kind == "validation-failed" and failed == 1, text
        assert "check_conv_backward" in text, text
    else:
        assert typed == 0 and kind == "validation-failed" and failed >= 4, text
        assert "NotImplementedError" in text, text
    hb.close_dialog(page)
    submitted = _submit(hub, student)
    if student.name == "demo-ada":
        feedback_before_the_deadline(hub, student, panel, submitted)
    elif student.name == "demo-ben":
        only_ones_own_feedback(hub, student, submitted)


def _submit(hub, student: hb.Person) -> float:
    """Submit from the Assignments tab; returns when (time.monotonic)."""
    before = _submissions(hub, student.name)
    hb.submit(student.page, ASSIGNMENT)
    # A resubmission's row is listed already: wait for the exchange to hold the new one, complete:
    # nbgrader's submit creates the folder, copies the notebook, then writes submission_secret.txt
    # last, so the folder is visible a moment before the secret its feedback is named by.
    from course_tools.service.publish import feedback_names

    def finished() -> bool:
        now = _submissions(hub, student.name)
        return len(now) == len(before) + 1 and bool(feedback_names(now[-1], [ASSIGNMENT]))
    assert _wait_for(finished, timeout=60), "nothing submitted (or no submission_secret.txt in 60 s)"
    return time.monotonic()


def _submissions(hub, student: str) -> list[Path]:
    """The student's submissions of the assignment in the exchange's inbound/, oldest first
    (nbgrader's names: student+assignment+timestamp+random; its timestamps sort as text)."""
    inbound = hub.layout.exchange / hub.layout.course_id / "inbound"
    return sorted((p for p in inbound.iterdir() if p.name.startswith(f"{student}+{ASSIGNMENT}+")),
                  key=lambda p: p.name.split("+")[2])


def set_the_policy(hub) -> None:
    """The instructor lowers the daily limit in the course's nbgrader_config.py, as the README
    says; the running grading service reads it at its next scan (no restart)."""
    config = hub.layout.course_folder / "nbgrader_config.py"
    with config.open("a") as out:   # appending keeps the grader account's ownership and mode
        out.write("\n# The hub test's policy: a low daily limit.\n" + POLICY)


# Whether each fetch of the service's feedback found the queue's page first: feedback in one round
# (issue 39) is shown only if at least one did (grading takes seconds; the queue's page is there
# about a second after Submit).
FOUND_THE_QUEUE_PAGE: list[bool] = []


def _service_feedback(hub, student: hb.Person, submitted: float, shot: str | None = None) -> str:
    """The grading service's feedback on the student's latest submission, as the student gets it,
    in one round: as soon as the service has published a page for that submission (the queue's
    page, usually), Fetch Feedback once in the Assignments tab and click (view feedback) once; the
    tab that opens turns into the graded page by itself (the page reloads itself, and the course's
    JupyterLab extension fetches the feedback again meanwhile). Returns its text, all within
    SERVICE_FEEDBACK_S of ``submitted``. ``shot``: the README's screenshots of the tab and the page."""
    from course_tools.service.publish import feedback_folder, feedback_names

    latest = _submissions(hub, student.name)[-1]
    name = feedback_names(latest, [ASSIGNMENT])[ASSIGNMENT]
    published = feedback_folder(hub.layout.exchange, hub.layout.course_id) / name
    assert _wait_for(published.exists, timeout=SERVICE_FEEDBACK_S - (time.monotonic() - submitted)), \
        f"no page from the grading service {SERVICE_FEEDBACK_S} s after {student.name}'s Submit"
    hb.fetch_feedback(student.page, ASSIGNMENT)
    tab = hb.open_feedback(student.page, ASSIGNMENT, latest.name.split("+")[2])
    FOUND_THE_QUEUE_PAGE.append("grading queue" in _text(tab))

    assert _wait_for(lambda: "grading queue" not in _text(tab),
                     timeout=max(1, SERVICE_FEEDBACK_S - (time.monotonic() - submitted))), (
        f"{student.name}: the queue's page did not turn into the graded page by itself within {SERVICE_FEEDBACK_S} s "
        f"of Submit (one Fetch Feedback, one click on (view feedback))")
    tab.locator("h1", has_text="feedback on your submission").wait_for()
    text = tab.locator("body").inner_text()
    assert time.monotonic() - submitted < SERVICE_FEEDBACK_S, f"{time.monotonic() - submitted:.0f} s"
    if shot:
        _shot(student.page, f"{shot}-tab")
        _shot(tab, shot)
    tab.close()
    return text


def _text(tab) -> str:
    """The tab's text now ("" while it reloads)."""
    try:
        return tab.locator("body").inner_text(timeout=3000)
    except Exception:  # noqa: BLE001 - a page between two loads has no body to read
        return ""


def feedback_before_the_deadline(hub, student: hb.Person, panel, submitted: float) -> None:
    """Issue 23 on the hub: the unflipped kernel submitted, the grading service's feedback in the
    Assignments tab names the mistake; fixed and resubmitted, every check passes; one more
    changed submission is past the day's limit (POLICY) and its page says when the next is."""
    page = student.page
    text = _service_feedback(hub, student, submitted, shot="feedback-before-the-deadline")
    assert "conv_backward: \N{BALLOT X} failed" in text, text
    assert "This looks like a known mistake: the kernel is not rotated by 180 degrees" in text, text
    assert "Points:" not in text, "the course's policy (checks) shows no points before the deadline"
    # The fix: the one cell the mistake changed, as the solution has it; Validate (which runs
    # every cell itself: no Run All, to keep the scenario short) now passes.
    solved = filled_release(ASSIGNMENT)
    fixed = next(i for i, (a, b) in enumerate(zip(with_mistake(ASSIGNMENT).cells, solved.cells)) if a.source != b.source)
    _reopen(page, panel)
    hb.replace_cell_source(page, panel, fixed, solved.cells[fixed].source)
    hb.save(page, panel, Path('/home') / student.name / ASSIGNMENT / f'{ASSIGNMENT}.ipynb')
    kind, dialog = hb.validate(page, panel)
    assert kind == "validation-success", dialog
    hb.close_dialog(page)
    text = _service_feedback(hub, student, _submit(hub, student))
    tasks = re.search(r"(\d+) of (\d+) tasks pass every hidden check", text)
    assert tasks and tasks.group(1) == tasks.group(2) and "\N{BALLOT X} failed" not in text, text
    # A third changed notebook: past the limit, kept for the final grading, not graded now.
    _reopen(page, panel)
    hb.replace_cell_source(page, panel, fixed, solved.cells[fixed].source + "\n# rotated: flipped on both spatial axes\n")
    hb.save(page, panel, Path('/home') / student.name / ASSIGNMENT / f'{ASSIGNMENT}.ipynb')
    text = _service_feedback(hub, student, _submit(hub, student))
    assert f"graded attempts of {ASSIGNMENT} are used up ({ATTEMPTS_PER_DAY} a day" in text, text
    assert "Your next graded attempt is possible from" in text and "kept for the final grading" in text, text
    _reopen(page, panel)


def _reopen(page, panel) -> None:
    """Back to the notebook's tab (the file browser's move may have taken the focus)."""
    page.locator(".lm-TabBar-tab", has_text=f"{ASSIGNMENT}.ipynb").first.click()
    panel.wait_for()


def only_ones_own_feedback(hub, student: hb.Person, submitted: float) -> None:
    """A second student's Fetch Feedback brings their own page only (ada's three are not theirs
    to fetch: their names are hashes of secrets only ada's submissions hold)."""
    text = _service_feedback(hub, student, submitted)
    assert re.search(r"\b0 of \d+ tasks pass every hidden check", text), text
    fetched = sorted((Path("/home") / student.name / ASSIGNMENT / "feedback").glob("*/*.html"))
    assert len(fetched) == 1, fetched


def grade_in_formgrader(hub, ta: hb.Person) -> None:
    course, page = hub.layout.course_id, ta.page
    page.goto(ta.url(f"/services/{course}/formgrader"))
    _modal_ok(page, hb.formgrader_row(page, ASSIGNMENT).locator("td.collect a"), "Success")
    page.goto(ta.url(f"/services/{course}/formgrader/manage_submissions/{ASSIGNMENT}"))
    for student in PERSONAS:
        row = page.locator("#main-table tr", has_text=student)
        _modal_ok(page, row.locator("td.autograde a"), "Success")
        row.locator("td.status", has_text=re.compile(r"^\s*(needs manual grading|graded)\s*$")).wait_for(timeout=300_000)
    # The roster's names are in the gradebook (course init --roster): graders see whom they grade.
    page.goto(ta.url(f"/services/{course}/formgrader/manage_students"))
    for student in PERSONAS:
        row = page.locator("#main-table tr", has_text=student)
        row.wait_for()
        assert SHOWN_NAMES[student] in row.inner_text(), row.inner_text()
    assert "None, None" not in page.locator("#main-table").inner_text()
    scores = {student: _scores(hub.layout, student) for student in PERSONAS}
    points = graded_tasks(release_notebook(ASSIGNMENT))  # full marks as the release states them
    assert scores["demo-ada"]["conv_backward"] == points["conv_backward"], (points, scores)
    assert scores["demo-cleo"]["conv_backward"] < points["conv_backward"], (points, scores)
    assert scores["demo-cleo"]["conv_im2col_forward"] == points["conv_im2col_forward"], (points, scores)
    assert scores["demo-ben"]["total"] == 0, scores
    assert list((hub.layout.course_folder / ".hidden_suite_results").rglob("*.json")), "the hidden suites did not run"
    # Manual grading of the written derivation: points and a comment, saved as the TA leaves each field.
    for student, (points, comment) in MANUAL.items():
        page.goto(ta.url(f"/services/{course}/formgrader/gradebook/{ASSIGNMENT}/{ASSIGNMENT}"))
        link = page.locator("#main-table a.name-shown", has_text=SHOWN_NAMES[student])
        link.wait_for(state="attached")
        # The form fills itself from the gradebook once its page has loaded: a value typed before
        # then is overwritten, so wait for the page to be quiet, and type again if it was lost.
        page.goto(ta.url(link.get_attribute("href")), wait_until="networkidle")
        for attempt in range(3):
            page.locator("#conv_derivation").fill(str(points))
            page.keyboard.press("Tab")
            page.locator("#conv_derivation-comment").fill(comment)
            page.keyboard.press("Tab")
            if _wait_for(lambda: _manual(hub.layout, student) == (points, comment), timeout=20):
                break
        else:
            raise AssertionError(f"{student}'s manual grade was not saved: {_manual(hub.layout, student)}")
        page.locator("#conv_derivation").scroll_into_view_if_needed()
        if student == "demo-ada":
            _math_typeset(page, "formgrader's grading page")
            _shot(page, "manual-grading")
            # "Submission #N" (Open live notebook) leads into the graders' service, not to the hub's root.
            live = page.locator("li.live-notebook a").first.get_attribute("href")
            assert live.startswith(f"/services/{course}/notebooks/") and live.endswith(f"{ASSIGNMENT}.ipynb"), live
            assert ta.status_of(live) == 200, live
    # Who saved each manual grade: recorded by the grader service (course_tools/report/grading_log.py),
    # as the hub user, for course report's "graded by".
    from course_tools.report.grading_log import read_log

    log = read_log(hub.layout.course_folder, ASSIGNMENT)
    assert {student: log.get((student, "conv_derivation")) for student in MANUAL} == {s: ta.name for s in MANUAL}, log
    page.goto(ta.url(f"/services/{course}/formgrader"))
    _modal_ok(page, hb.formgrader_row(page, ASSIGNMENT).locator("td.generate-feedback a"), "Success")
    _modal_ok(page, hb.formgrader_row(page, ASSIGNMENT).locator("td.release-feedback a"), "Success")
    for student in PERSONAS:
        assert (hub.layout.course_folder / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").exists()


def _modal_ok(page, button, expected: str) -> None:
    button.click()
    modal = page.locator(".modal:visible")
    modal.locator(".modal-body", has_text=re.compile(f"{expected}|rror")).wait_for(timeout=300_000)
    text = modal.inner_text()
    assert expected in text, text
    modal.locator("button", has_text="OK").first.click()
    modal.wait_for(state="hidden")


def _manual(layout, student: str):
    with _gradebook(layout) as gradebook:
        grade = gradebook.find_grade("conv_derivation", ASSIGNMENT, ASSIGNMENT, student)
        comment = gradebook.find_comment("conv_derivation", ASSIGNMENT, ASSIGNMENT, student)
        return (grade.manual_score, comment.manual_comment)


def _wait_for(condition, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def read_the_feedback(hub, student: hb.Person) -> None:
    page = student.page
    hb.fetch_feedback(page, ASSIGNMENT)
    # The final grading's feedback is on the latest submission (the earlier ones keep the service's).
    tab = hb.open_feedback(page, ASSIGNMENT, _submissions(hub, student.name)[-1].name.split("+")[2])
    html = tab.locator("html").inner_html()
    text = tab.locator("body").inner_text()
    if student.name == "demo-cleo":
        _shot(tab, "feedback")
    shown = {name: round(float(score), 2) for name, score in
             re.findall(r'href="#([\w-]+)">[^<]*</a> \(Score: ([\d.]+) / [\d.]+\)', html)}
    total = re.search(r"\(Score: ([\d.]+) / ([\d.]+)\)", text)
    expected = _scores(hub.layout, student.name)
    assert total and round(float(total.group(1)), 2) == expected.pop("total"), (text[:300], expected)
    assert shown == expected, (shown, expected)
    # Lines of the hidden suites that students never see (the notebook's own helpers they do).
    leaked = sorted((set(hidden_code_lines()) - given_lines()) & {line.strip() for line in text.splitlines()})
    assert not leaked, f"the feedback page shows hidden test code: {leaked[:3]}"
    if student.name in MANUAL:
        assert MANUAL[student.name][1] in text, "the grader's comment is not in the feedback"
    if student.name == "demo-cleo":
        assert "Not run for grading" in text, "04's demonstrations are not named in the feedback"
        feedback_in_a_tab_of_its_own(student, tab)
    tab.close()


def _lines_fit(page, where: str) -> None:
    """No output of the page (the checks' lines, "Not run for grading ...") runs off it sideways."""
    wide = page.locator(".jp-OutputArea-output pre").evaluate_all(
        "pres => pres.filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.innerText.slice(0, 80))")
    assert not wide, f"outputs wider than {where}: {wide}"


def feedback_in_a_tab_of_its_own(student: hb.Person, tab) -> None:
    """The feedback as (view feedback) opened it, in one click: a browser tab of its own from the
    server's /files/, with no "Trust HTML" step (the server serves it sandboxed), its math typeset
    by the server's own MathJax; the file browser has moved to its folder as well."""
    # The server's _xsrf query may follow: the path is what names the page.
    path = urllib.parse.urlsplit(tab.url).path
    assert f"/user/{student.name}/files/{ASSIGNMENT}/feedback/" in path and path.endswith(f"/{ASSIGNMENT}.html"), tab.url
    # Sandboxed: its scripts run in an origin of their own, without the student's cookies or API.
    assert tab.evaluate("() => window.origin") == "null", "the feedback tab runs with the server's origin"
    assert "sandbox allow-scripts" in tab.request.get(tab.url).headers.get("content-security-policy", "")
    _math_typeset(tab, "the feedback")
    _lines_fit(tab, "the feedback")
    student.page.locator(".jp-DirListing-item", has_text=f"{ASSIGNMENT}.html").first.wait_for()


def isolation(hub, student: hb.Person, ta: hb.Person) -> None:
    course, other = hub.layout.course_id, "demo-ben"
    # The browser: the course service and another student's server are closed to a student.
    assert student.status_of(f"/user/{student.name}/api/contents/{ASSIGNMENT}") == 200  # the own server works
    assert ta.status_of(f"/services/{course}/formgrader/manage_assignments") == 200     # and the TA's access
    # formgrader is off in the student's own server (the student install turns it off).
    assert student.status_of(f"/user/{student.name}/formgrader") == 404
    for path in (f"/services/{course}/lab", f"/services/{course}/formgrader",
                 f"/services/{course}/formgrader/manage_assignments", f"/services/{course}/api/contents",
                 f"/user/{other}/lab", f"/user/{other}/api/contents/{ASSIGNMENT}",
                 f"/user/{other}/files/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", f"/hub/api/users/{other}"):
        assert student.status_of(path) in (403, 404), f"{student.name} reached {path}"
    # A cell in the student's own notebook: every path the test knows is closed to it.
    layout, folder = hub.layout, hub.layout.course_folder
    secrets = [*CHECKOUT_SECRETS, *sorted((layout.bundle / "autograder" / ASSIGNMENT).glob("*.py")), layout.bundle / "autograder",
               layout.bundle / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
               layout.bundle / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", layout.grader_env,
               folder, folder / "gradebook.db", folder / ".hidden_suite_results", folder / "nbgrader_config.py",
               folder / "submitted" / other / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
               folder / "autograded" / other / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
               folder / "feedback" / other / ASSIGNMENT / f"{ASSIGNMENT}.html",
               layout.exchange / course / "inbound", layout.grader_home / ".jupyter" / "nbgrader_config.py",
               # Feedback before the deadline: the other student's fetched page, the service's
               # folder, and the exchange's feedback folder (readable by exact name only, which
               # is a hash of a secret in the other student's submission, as for nbgrader's own).
               *sorted((Path("/home") / other / ASSIGNMENT / "feedback").glob("*/*.html")),
               folder / ".service", layout.exchange / course / "feedback",
               Path("/home") / other / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"]
    assert all(os.path.exists(p) for p in secrets), [p for p in secrets if not os.path.exists(p)]
    found = _probe_from_a_cell(student, [str(p) for p in secrets], layout.exchange / course / "inbound")
    opened = {path: result for path, result in found["paths"].items() if result != "PermissionError"}
    assert not opened, f"a student's notebook could open: {opened}"
    assert found["glob"] == [] and found["modules"] == [], found
    # Submissions in inbound/ are readable by exact name (nbgrader's model): the name has a random part.
    for submission in (layout.exchange / course / "inbound").iterdir():
        assert re.fullmatch(rf"[\w-]+\+{ASSIGNMENT}\+[^+]+\+[\w=-]{{12}}", submission.name), submission.name


# What the checkout the hub was started from holds that no student may read (it stays closed
# to them whether or not the hub's tools chmod'ed it: a parent closed to them is enough).
CHECKOUT_SECRETS = [ROOT / "autograder" / ASSIGNMENT / "test_conv_backward.py", ROOT / "autograder",
                    ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                    ROOT / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", ROOT / ".git", ROOT / ".venv" / "pyvenv.cfg"]


def in_a_students_terminal(hub, student: hb.Person) -> None:
    """The student's own JupyterLab terminal, a login shell (/etc/profile resets PATH there):
    `course check` runs and reports every task; reading the checkout's hidden suite and solution
    and the gradebook is refused. What the shell prints goes to files in the student's home."""
    home = Path(pwd.getpwnam(student.name).pw_dir)
    outputs = {name: home / f".hub-test-{name}" for name in ("check", "check-status", "read", "done")}
    refused = [ROOT / "autograder" / ASSIGNMENT / "test_conv_backward.py",
               ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", hub.layout.course_folder / "gradebook.db"]
    hb.new_terminal(student.page)
    student.page.keyboard.type(
        f"course check {ASSIGNMENT}/{ASSIGNMENT}.ipynb > {outputs['check']} 2>&1; echo $? > {outputs['check-status']}; "
        f"cat {' '.join(shlex.quote(str(p)) for p in refused)} > {outputs['read']} 2>&1; touch {outputs['done']}\n")
    try:
        assert _wait_for(outputs["done"].exists, timeout=hb.RUN_TIMEOUT_S), "the terminal's commands did not finish"
        check, status, read = (outputs[name].read_text() for name in ("check", "check-status", "read"))
        assert status.strip() == "0" and re.search(r"\b(\d+) of \1 checks pass", check), check
        assert all(f"{path}: Permission denied" in read for path in refused), read
        assert "SECRET" not in read and "BEGIN SOLUTION" not in read, read[:300]
    finally:
        for path in outputs.values():
            path.unlink(missing_ok=True)


CORRECTION = "# Corrected during the semester: this comment is new in the second version."


def fix_the_release_on_the_running_hub(hub, instructor: hb.Person) -> None:
    """Mid-semester, the instructor corrects a locked code cell of the notebook (in source/ and in
    the release, as `course build` writes it: the new text and nbgrader's checksum of it) in a copy of the bundle,
    puts it into the running hub (course_tools/hub/update.py, `make hub-update`), and releases
    v2 in the course's terminal. The bundle copy is swapped in still closed to students (0750,
    the grader account's group); the two services come back with new processes; the exchange
    hands out v2 with the correction; nothing of the semester is lost (the course folder's v1)."""
    import tempfile

    from nbgrader.utils import compute_checksum

    from course_tools.hub import deploy, update

    layout, course = hub.layout, hub.layout.course_id
    grader = pwd.getpwnam(layout.grader_account)
    before = update.services(layout, grader.pw_uid)
    with tempfile.TemporaryDirectory(prefix="hub-test-fixed-bundle-") as scratch:
        fixed = Path(scratch)
        deploy.copy_bundle_into(fixed, layout.bundle)   # the checkout as the hub copied it at its start
        # The same line in the source notebook and in the release, as `course build` would write
        # it (`course release` regenerates the release from source/ and refuses a mismatch).
        released = fixed / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = nbformat.read(released, as_version=4)
        cell = next(c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("locked")
                    and not c.metadata.nbgrader.get("grade"))
        cell.source += "\n" + CORRECTION
        if "checksum" in cell.metadata.nbgrader:
            cell.metadata.nbgrader.checksum = compute_checksum(cell)
        nbformat.write(nb, released)
        source = fixed / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        nb = nbformat.read(source, as_version=4)
        twin = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell.metadata.nbgrader.grade_id)
        twin.source += "\n" + CORRECTION
        nbformat.write(nb, source)
        restarted = update.update(layout, source=fixed, say=print)
    assert set(restarted).isdisjoint(before) and len(restarted) == len(before) == 2, (before, restarted)
    mode = layout.bundle.stat()
    assert (mode.st_uid, mode.st_gid, mode.st_mode & 0o777) == (0, grader.pw_gid, 0o750), oct(mode.st_mode)
    assert CORRECTION in (layout.bundle / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    # The course's server is a new process: a new terminal, as the instructor would open one.
    page = instructor.page
    page.goto(instructor.url(f"/services/{course}/lab?reset"))  # not the earlier server's terminal
    hb.wait_for_lab(page)
    hb.open_terminal(page)
    said = layout.grader_home / ".hub-test-release-v2"   # what the terminal printed, for the assertion
    page.keyboard.type(f"course release {ASSIGNMENT} --yes > {said} 2>&1; echo exit $? >> {said}\n")
    outbound = layout.exchange / course / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert _wait_for(lambda: said.exists() and "exit " in said.read_text(), timeout=180), "`course release` did not end"
    printed = said.read_text()
    said.unlink()
    assert printed.rstrip().endswith("exit 0") and CORRECTION in outbound.read_text(), printed
    handed_out = nbformat.read(outbound, as_version=4)
    assert handed_out.metadata["course"]["release_version"] == "v2", handed_out.metadata.get("course")
    kept = sorted(p.name for p in (layout.course_folder / "release_versions" / ASSIGNMENT).glob("v*"))
    assert kept == ["v1", "v2"], kept


PROBE = '''import glob, importlib.util, json, os
found = {"paths": {}}
for path in json.loads(%r):
    try:
        os.listdir(path) if os.path.isdir(path) else open(path, "rb").read(1)
        found["paths"][path] = "opened"
    except OSError as err:
        found["paths"][path] = type(err).__name__
found["glob"] = glob.glob(%r + "/*")
found["modules"] = [m for m in ("course_tools", "autograder", "torch") if importlib.util.find_spec(m)]
print("PROBE" + json.dumps(found))
'''


def _probe_from_a_cell(student: hb.Person, paths: list[str], inbound: Path) -> dict:
    """A new cell at the end of the student's notebook tries every path; returns what it printed."""
    page = student.page
    page.locator(".lm-TabBar-tab", has_text=f"{ASSIGNMENT}.ipynb").first.click()
    panel = page.locator(".jp-NotebookPanel:visible")
    last = panel.locator(".jp-Notebook .jp-Cell").last
    last.scroll_into_view_if_needed()
    last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")  # a new cell below, as in command mode
    panel.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content").click()
    page.keyboard.insert_text(PROBE % (json.dumps(paths), str(inbound)))
    page.keyboard.press("Shift+Enter")
    output = panel.locator(".jp-OutputArea-output", has_text="PROBE").last
    output.wait_for(timeout=60_000)
    return json.loads(output.inner_text().strip().removeprefix("PROBE"))


def test_stopping_the_hub_leaves_nothing_to_the_removed_accounts(hub_run):
    """After the stop (a Ctrl-C of `make hub`), no path under the hub's root is owned by a uid or
    gid that userdel freed: the next account given uid 1001 would own the grader's files."""
    from course_tools.hub import accounts

    layout, ids = hub_run.layout, hub_run.ids
    assert ids, "the hub never started"
    started = time.monotonic()
    hub_run.stop()
    print(f"the hub stopped in {time.monotonic() - started:.1f} s")   # for the notes; times are not asserted
    # The hub's log holds the hub's, the proxy's and every user server's output: a semester's
    # scenario and the stop leave no traceback in it (a walk once found one from the services'
    # health check at the stop, and one per Fetch Feedback before the first page existed).
    log = layout.log.read_text(errors="replace")
    tracebacks = [i for i, line in enumerate(log.splitlines()) if "Traceback" in line]
    assert not tracebacks, "\n".join(log.splitlines()[tracebacks[0]:tracebacks[0] + 30])
    assert not set(ids) & set(accounts.leftovers()), accounts.leftovers()
    uids, gids = {uid for uid, _ in ids.values()}, {gid for _, gid in ids.values()}
    every = [layout.root, *(Path(folder) / name for folder, subfolders, files in os.walk(layout.root)
                            for name in subfolders + files)]
    left = [path for path in every if path.lstat().st_uid in uids or path.lstat().st_gid in gids]
    assert not left, f"{len(left)} paths under {layout.root} belong to removed accounts, e.g. {left[:5]}"
    assert not layout.profile_snippet.exists()
