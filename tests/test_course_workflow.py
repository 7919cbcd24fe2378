"""The course workflow end to end, through nbgrader's real exchange, with the `course` command.

A temporary course folder and exchange; five students with their own home folders (nbgrader
keeps each account's submissions under $HOME): one correct, one blank, one with a realistic
mistake, one hostile, one after the deadline. The instructor releases, collects, grades (in
parallel), generates and releases feedback, and exports; the students fetch their feedback.
"""
from __future__ import annotations

import csv
import json
import os
import datetime
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from conftest import gradebook_task_scores, hidden_code_lines
from fixtures.hostile_submissions import HOSTILE
from grading_support import inject, wrong_catalogue
from hub_browser import CHROMIUM, CHROMIUM_ARGS
from course_tools.build import release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import Course
from course_tools.demo_class import MISTAKE_BREAKS, PERSONAS, DemoClass, Persona, apply_edits, filled_release
from course_tools.grading.launch.fanout import Job, grade_jobs
from course_tools.grading.launch.on_dask import connect, grade_text
from course_tools.grading.results import ResultStore, bundle_fingerprint
from course_tools.grading.settings import GradingSettings
from course_tools.grading.suite.run import graded_tasks

ASSIGNMENT = "01_forward_ops"
POINTS = graded_tasks(release_notebook(ASSIGNMENT))
TOTAL = sum(POINTS.values())


def _utc(delta: datetime.timedelta = datetime.timedelta()) -> str:
    return (datetime.datetime.now(datetime.timezone.utc) + delta).strftime("%Y-%m-%d %H:%M:%S UTC")


def task_scores(course: Course, student: str) -> dict[str, float]:
    with course.gradebook() as gradebook:
        return gradebook_task_scores(gradebook, ASSIGNMENT, POINTS)[student]


@pytest.fixture(scope="module")
def semester(tmp_path_factory):
    """The whole semester of one assignment, run once; tests below inspect what it left."""
    demo = DemoClass(tmp_path_factory.mktemp("semester"), ASSIGNMENT)
    folder = str(demo.course_dir)
    assert course(["init", folder, "--course-id", "demo", "--exchange", str(demo.exchange)]) == 0
    assert course(["release", ASSIGNMENT, "--course", folder, "--due", _utc(datetime.timedelta(days=7))]) == 0
    for persona in demo.personas:
        assert demo.fetch(persona.student) == 0
    for persona in demo.personas:
        if not persona.late:
            assert demo.submit(persona) == 0
    # The deadline passes: the instructor moves the due date to now (whole seconds, so wait a
    # little first: the last on-time submission must stay before it); eve submits after it.
    time.sleep(1.5)
    assert course(["release", ASSIGNMENT, "--course", folder, "--due", _utc()]) == 0
    for persona in demo.personas:
        if persona.late:
            assert demo.submit(persona) == 0
    # fay submits late too, then backdates her submission in the exchange to before the deadline.
    assert demo.fetch("fay") == 0 and demo.submit(Persona("fay", "backdates", filled_release)) == 0
    forged = _utc(-datetime.timedelta(hours=2)).replace(" UTC", ".000001 UTC")
    (inbound,) = (demo.exchange / "demo" / "inbound").glob(f"fay+{ASSIGNMENT}+*")
    (inbound / "timestamp.txt").chmod(0o644)
    (inbound / "timestamp.txt").write_text(forged)
    inbound.rename(inbound.with_name(f"fay+{ASSIGNMENT}+{forged}+forged"))
    assert course(["collect", ASSIGNMENT, "--course", folder]) == 0
    assert course(["grade", ASSIGNMENT, "--course", folder, "--workers", "2"]) == 0
    assert course(["feedback", ASSIGNMENT, "--course", folder]) == 0
    for persona in demo.personas:
        assert demo.fetch(persona.student, feedback=True) == 0
    assert course(["export", "--course", folder, "--to", str(demo.base / "grades.csv")]) == 0
    return demo, Course(demo.course_dir)


def test_every_student_gets_the_score_they_deserve(semester):
    _, course_folder = semester
    ada, ben, cleo, dan, eve = (task_scores(course_folder, p.student) for p in PERSONAS)
    assert ada == POINTS                                   # correct: full marks
    assert all(score == 0 for score in ben.values())       # blank release: nothing
    lost = {task for task, score in cleo.items() if score < POINTS[task]}
    assert lost == MISTAKE_BREAKS[ASSIGNMENT]              # the mistake costs exactly its tasks
    assert {task for task, score in dan.items() if score < POINTS[task]} == {"forward_negate"}
    assert eve == POINTS                                   # late, but correct ...


def test_late_submission_loses_ten_percent(semester):
    _, course_folder = semester
    with course_folder.gradebook() as gradebook:
        late = {s.student_id: (s.total_seconds_late, s.late_submission_penalty or 0.0, s.score)
                for s in gradebook.assignment_submissions(ASSIGNMENT)}
    seconds, penalty, score = late["eve"]
    assert seconds > 0 and score == TOTAL
    assert penalty == pytest.approx(0.1 * TOTAL)           # one started day late: 10%
    assert all(late[p.student][:2] == (0, 0.0) for p in PERSONAS if not p.late)


def test_a_backdated_submission_is_late_all_the_same(semester):
    _, course_folder = semester
    with course_folder.gradebook() as gradebook:
        fay = gradebook.find_submission(ASSIGNMENT, "fay")
        assert fay.total_seconds_late > 0                  # the exchange's clock, not hers
        assert fay.late_submission_penalty == pytest.approx(0.1 * TOTAL)


def test_students_fetch_only_their_own_feedback_without_hidden_code(semester):
    demo, _ = semester
    hidden = hidden_code_lines()
    for persona in PERSONAS:
        pages = list((demo.home(persona.student) / ASSIGNMENT / "feedback").glob("*/*.html"))
        assert len(pages) == 1, (persona.student, pages)
        html = pages[0].read_text()
        assert "Hidden checks for forward_negate" in html
        assert not [line for line in hidden if line in html], persona.student
    cleo = next((demo.home("cleo") / ASSIGNMENT / "feedback").glob("*/*.html")).read_text()
    assert "Hidden checks for forward_transpose" in cleo and "\N{BALLOT X}" in cleo


def test_gradebook_export_and_files_agree(semester):
    demo, course_folder = semester
    rows = {r["student_id"]: r for r in csv.DictReader(open(demo.base / "grades.csv"))}
    assert set(rows) == {p.student for p in PERSONAS} | {"fay"}
    with course_folder.gradebook() as gradebook:
        assert {s.id for s in gradebook.students} == set(rows)
        for submission in gradebook.assignment_submissions(ASSIGNMENT):
            grades = [g for nb in submission.notebooks for g in nb.grades]
            assert submission.score == pytest.approx(sum(g.score for g in grades))
            assert submission.max_score == TOTAL
            row = rows[submission.student_id]
            assert float(row["raw_score"]) == round(submission.score, 2)  # rounded as formgrader shows it
            penalty = submission.late_submission_penalty or 0
            assert float(row["score"]) == round(submission.score - penalty, 2)
            assert float(row["late_submission_penalty"] or 0) == round(penalty, 2)
            stamp = (course_folder.folder("submitted") / submission.student_id / ASSIGNMENT / "timestamp.txt")
            assert stamp.read_text().strip().startswith(submission.timestamp.strftime("%Y-%m-%d %H:%M:%S"))
            assert not submission.needs_manual_grade   # 01 has no written answers


def test_status_reports_every_student(semester, capsys):
    demo, _ = semester
    assert course(["status", ASSIGNMENT, "--course", str(demo.course_dir)]) == 0
    out = capsys.readouterr().out
    for persona in PERSONAS:
        assert persona.student in out
    assert "late" in out
    assert course(["status", "--course", str(demo.course_dir)]) == 0
    assert ASSIGNMENT in capsys.readouterr().out


def test_parallel_grading_scores_equal_grading_one_at_a_time(semester):
    _, course_folder = semester
    parallel = {p.student: task_scores(course_folder, p.student) for p in PERSONAS}
    assert course(["grade", ASSIGNMENT, "--course", str(course_folder.root), "--workers", "1", "--fresh"]) == 0
    sequential = {p.student: task_scores(course_folder, p.student) for p in PERSONAS}
    assert sequential == parallel


@pytest.fixture(scope="module")
def dask_cluster():
    """A real Dask cluster on loopback: two worker processes of one thread, as an instructor's
    `dask worker --nthreads 1` would be."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  host="127.0.0.1") as cluster:
        yield cluster


# A few of the catalogue's wrong submissions (tests/fixtures/wrong_submissions) and hostile ones
# (tests/fixtures/hostile_submissions.py: cheap ones, with no placeholder to fill in).
DASK_WRONG = ("summation_keeps_dims", "relu_returns_the_mask")
DASK_HOSTILE = ("os_exit", "monkeypatch_numpy_and_testing")


def _catalogue_jobs(folder: Path) -> list:
    notebooks = {name: apply_edits(filled_release(ASSIGNMENT), case["edits"])
                 for case in wrong_catalogue(ASSIGNMENT) for name in [case["name"]] if name in DASK_WRONG}
    notebooks |= {name: inject(filled_release(ASSIGNMENT), case["inject"])
                  for case in HOSTILE for name in [case["name"]] if name in DASK_HOSTILE}
    assert len(notebooks) == len(DASK_WRONG) + len(DASK_HOSTILE)
    jobs = []
    for name, nb in notebooks.items():
        (folder / name).mkdir(parents=True)
        nbformat.write(nb, str(folder / name / f"{ASSIGNMENT}.ipynb"))
        jobs.append(Job(name, ASSIGNMENT, folder / name / f"{ASSIGNMENT}.ipynb"))
    return jobs


def _stored_scores(store) -> dict:
    """{key: {task: score}} of every result in ``store``."""
    return {path.stem: {task: graded["score"] for task, graded in json.loads(path.read_text())["tasks"].items()}
            for path in (store.folder / ASSIGNMENT).glob("*.json")}


def test_grading_on_a_dask_cluster_scores_the_same(semester, dask_cluster, tmp_path):
    """`course grade --scheduler` gives the class the scores the local pool gave, and the Dask
    path (each worker's warm fork server) scores the catalogue's wrong and hostile notebooks as
    the local pool does."""
    _, course_folder = semester
    before = {p.student: task_scores(course_folder, p.student) for p in PERSONAS}
    assert course(["grade", ASSIGNMENT, "--course", str(course_folder.root), "--fresh",
                   "--scheduler", dask_cluster.scheduler_address]) == 0
    assert {p.student: task_scores(course_folder, p.student) for p in PERSONAS} == before

    jobs = _catalogue_jobs(tmp_path / "submitted")
    settings = GradingSettings.current(course_root=course_folder.root)
    on_dask, here = ResultStore(tmp_path / "dask"), ResultStore(tmp_path / "here")
    report = grade_jobs(jobs, on_dask, settings, scheduler=dask_cluster.scheduler_address, progress=False)
    assert not report.failed and report.graded == len(jobs)
    report = grade_jobs(jobs, here, settings, workers=2, progress=False)
    assert not report.failed and report.graded == len(jobs)
    dask_scores = _stored_scores(on_dask)
    assert dask_scores == _stored_scores(here)
    assert all(sum(scores.values()) < TOTAL for scores in dask_scores.values())  # each lost points


def _fork_servers(worker_pid: int) -> list[int]:
    """The multiprocessing fork servers whose parent is ``worker_pid`` (the same machine)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == worker_pid and b"multiprocessing.forkserver" in command:
            found.append(int(entry.name))
    return found


def test_a_dask_worker_whose_fork_server_was_killed_grades_the_next_task(dask_cluster, tmp_path):
    nb = tmp_path / f"{ASSIGNMENT}.ipynb"
    nbformat.write(filled_release(ASSIGNMENT), str(nb))
    client = connect(dask_cluster.scheduler_address)
    with client:
        workers = client.run(os.getpid)
        (address, pid), *_ = workers.items()
        deadline = time.monotonic() + 60
        while not _fork_servers(pid):   # started by the plugin when the worker started
            assert time.monotonic() < deadline, f"no fork server under the Dask worker {pid}"
            time.sleep(0.2)
        (killed,) = _fork_servers(pid)
        os.kill(killed, signal.SIGKILL)
        future = client.submit(grade_text, ASSIGNMENT, nb.name, nb.read_text(), bundle_fingerprint(),
                               GradingSettings.current().as_dict(), pure=False, workers=[address])
        result = future.result(timeout=240)
        assert result["grading_error"] is None, result["grading_error"]
        assert {task: graded["score"] for task, graded in result["tasks"].items()} == POINTS
        (restarted,) = _fork_servers(pid)
        assert restarted != killed


def test_a_dask_worker_with_another_bundle_is_refused(dask_cluster):
    with connect(dask_cluster.scheduler_address) as client:
        future = client.submit(grade_text, ASSIGNMENT, "x.ipynb", "{}", "0000000000000000",
                               GradingSettings.current().as_dict(), pure=False)
        with pytest.raises(RuntimeError, match="differs from the grader's"):
            future.result(timeout=60)


# ---------------------------------------------------------------------------------- release order
def test_the_late_window_ends_when_late_work_stops_earning_points():
    from course_tools.late_penalty import PercentPerDay, late_window_end

    due = datetime.datetime(2027, 2, 14, 23, 59)
    end = late_window_end(due, 10, 100)
    assert end == due + datetime.timedelta(days=9)
    policy = PercentPerDay(percent_per_day=10, max_percent=100)
    at_end, just_after = ((t - due).total_seconds() for t in (end, end + datetime.timedelta(seconds=1)))
    assert policy.late_submission_penalty("s", 10.0, at_end) == 9.0        # 9 started days: 90%
    assert policy.late_submission_penalty("s", 10.0, just_after) == 10.0   # the 10th: nothing left
    assert late_window_end(due, 30, 100) == due + datetime.timedelta(days=3)
    assert late_window_end(due, 10, 50) is None                          # late work always earns half


def test_a_release_that_would_reveal_an_open_assignment_asks_for_force(tmp_path, capsys):
    """Releasing 02 hands out 01's reference code: while 01 still accepts late work that earns points,
    `course release 02` refuses without --force, naming 01, and `course status` says so."""
    folder, exchange = str(tmp_path / "course"), tmp_path / "exchange"
    outbound = exchange / "order" / "outbound"
    assert course(["init", folder, "--course-id", "order", "--exchange", str(exchange)]) == 0
    assert course(["release", "01_forward_ops", "--course", folder, "--due", _utc(-datetime.timedelta(days=2))]) == 0
    capsys.readouterr()

    assert course(["status", "--course", folder]) == 0
    out = capsys.readouterr().out
    assert "next release: 01_forward_ops's late window is open until" in out and "course release 02_backward_ops" in out

    assert course(["release", "02_backward_ops", "--course", folder]) == 2
    captured = capsys.readouterr()
    assert "01_forward_ops's late window is open until" in captured.out
    assert "reference solution of 01_forward_ops" in captured.out and "--force" in captured.err
    assert not (outbound / "02_backward_ops").exists()

    assert course(["release", "02_backward_ops", "--course", folder, "--force"]) == 0
    assert "warning: 01_forward_ops's late window" in capsys.readouterr().out
    assert (outbound / "02_backward_ops").is_dir()
    assert course(["status", "--course", folder]) == 0
    assert "revealed: 02_backward_ops is released and 01_forward_ops's late window" in capsys.readouterr().out

    # 01's deadline moved 20 days back: its window (9 days under 10% per started day) has closed
    assert course(["release", "01_forward_ops", "--course", folder, "--due", _utc(-datetime.timedelta(days=20))]) == 0
    capsys.readouterr()
    assert course(["status", "--course", folder]) == 0
    out = capsys.readouterr().out
    assert "revealed" not in out and "01_forward_ops's late window" not in out
    assert "02_backward_ops has no due date" in out      # 03 would reveal 02, which has none


# ---------------------------------------------------------------------------------- the command itself
def _console(*args, cwd=None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "course"
    return subprocess.run([str(script), *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("command", ["init", "build", "release", "collect", "grade", "feedback", "export", "status",
                                     "fetch", "submit", "check", "demo"])
def test_every_subcommand_has_help(command):
    result = _console(command, "--help")
    assert result.returncode == 0 and "usage: course " + command in result.stdout


@pytest.mark.parametrize("args,message", [
    (["grade", "99_nope"], "unknown assignment '99_nope'"),
    (["check", "does_not_exist.ipynb"], "does_not_exist.ipynb"),
    (["status"], "no gradebook"),
    (["grade", ASSIGNMENT], "no gradebook"),
    (["status", "--course", "/nonexistent/course"], "not a course folder"),
    (["submit", ASSIGNMENT], "rename your work back to 01_forward_ops.ipynb"),
    (["fetch", "99_nope"], "unknown assignment"),
])
def test_errors_say_what_to_do(args, message, tmp_path):
    # the working folder is a course folder without a gradebook, and a renamed notebook
    (tmp_path / ASSIGNMENT).mkdir()
    (tmp_path / ASSIGNMENT / "my_work.ipynb").write_text("{}")
    (tmp_path / "nbgrader_config.py").write_text(
        f'c = get_config()\nc.CourseDirectory.root = r"{tmp_path}"\n'
        f'c.CourseDirectory.db_url = "sqlite:///{tmp_path}/gradebook.db"\n')
    result = _console(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_grading_errors_are_listed_apart_and_the_class_is_still_graded(semester, monkeypatch, capsys):
    """One notebook's grading fails in the grader (not the student's fault): `course grade` grades the
    others, stores nothing for that one, lists it as a grading error and exits 1."""
    from course_tools.grading.launch import fanout

    _, course_folder = semester
    real = fanout.grade_many

    def grader_fails_for_ben(jobs, workers, settings):
        for (key, job), result in real(jobs, workers, settings):
            if job.student == "ben":
                result = {"assignment": job.assignment, "tasks": {},
                          "grading_error": "the grader failed on this notebook (injected fault)"}
            yield (key, job), result

    monkeypatch.setattr(fanout, "grade_many", grader_fails_for_ben)
    before = {p.student: task_scores(course_folder, p.student) for p in PERSONAS}
    assert course(["grade", ASSIGNMENT, "--course", str(course_folder.root), "--fresh", "--workers", "2"]) == 1
    out = capsys.readouterr().out
    assert "GRADING ERRORS" in out and "ben: " in out and "injected fault" in out
    assert {p.student: task_scores(course_folder, p.student) for p in PERSONAS if p.student != "ben"} == \
        {s: v for s, v in before.items() if s != "ben"}
    monkeypatch.setattr(fanout, "grade_many", real)
    assert course(["grade", ASSIGNMENT, "--course", str(course_folder.root), "--student", "ben"]) == 0
    assert task_scores(course_folder, "ben") == before["ben"]


# ---------------------------------------------------------------------------------- the class report
def test_report_statistics_match_the_gradebook(semester, tmp_path, capsys):
    """course report's per-task numbers are the gradebook's, its per-check counts the stored results'."""
    import statistics

    from course_tools.report import data as report_data
    from course_tools.report.stats import check_stats, task_stats

    _, course_folder = semester
    assert course(["report", ASSIGNMENT, "--course", str(course_folder.root), "--csv", str(tmp_path / "checks.csv")]) == 0
    out = capsys.readouterr().out
    assert "forward_transpose" in out and "report:" in out
    data = report_data.load(course_folder, ASSIGNMENT)
    by_task = {t.task: t for t in task_stats(data)}
    direct = {p.student: task_scores(course_folder, p.student) for p in PERSONAS}
    direct["fay"] = task_scores(course_folder, "fay")
    for task in POINTS:
        scores = [row[task] for row in direct.values()]
        assert by_task[task].mean == pytest.approx(statistics.fmean(scores))
        assert by_task[task].median == pytest.approx(statistics.median(scores))
        assert by_task[task].share("full") == pytest.approx(sum(s == POINTS[task] for s in scores) / len(scores))
        assert by_task[task].share("zero") == pytest.approx(sum(s == 0 for s in scores) / len(scores))
    # a check's failures: the students (not handing back the blank release) failing any of its cases
    checks = check_stats(data)
    failed_transpose = sum(c.failures for c in checks if c.task == "forward_transpose")
    stored = len({(r.student, c["check"]) for r in data.students if not r.blank
                  for c in (r.result or {}).get("tasks", {}).get("forward_transpose", {}).get("checks", [])
                  if not c["passed"]})
    assert failed_transpose == stored > 0
    assert [s.student for s in data.students if s.blank] == ["ben"]
    rows = list(csv.DictReader(open(tmp_path / "checks.csv")))
    assert len(rows) == sum(len(g["checks"]) for r in data.students for g in (r.result or {}).get("tasks", {}).values())
    # the blank release was graded as a reference: no check passes it
    assert data.blank is not None and not any(c.blank_passes for c in checks)
    late = {s.student for s in data.students if s.seconds_late > 0}
    assert {"eve", "fay"} <= late


def test_report_page_is_self_contained_and_renders(semester, tmp_path):
    from html.parser import HTMLParser

    _, course_folder = semester
    page = Path(course_folder.root) / "reports" / f"{ASSIGNMENT}.html"
    if not page.exists():
        assert course(["report", ASSIGNMENT, "--course", str(course_folder.root)]) == 0
    text = page.read_text()

    class Collect(HTMLParser):
        def __init__(self):
            super().__init__()
            self.images, self.links, self.headings = [], [], []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "img":
                self.images.append(attrs.get("src", ""))
            if tag in ("link", "script") and (attrs.get("href") or attrs.get("src")):
                self.links.append(attrs)

    parser = Collect()
    parser.feed(text)
    assert len(parser.images) >= 3 and all(src.startswith("data:image/png;base64,") for src in parser.images)
    assert not parser.links, "the page must not load anything from elsewhere"
    for section in ("Tasks", "What the class got wrong", "Signals", "Late work", "Grading errors (not scores)"):
        assert f"<h2>{section}</h2>" in text
    if CHROMIUM.exists():  # the browser the hub's tests use: the page renders to a non-blank screenshot
        # COURSE_REPORT_SCREENSHOT=docs (make report-screenshot) keeps it as the README's picture
        shot = Path(os.environ.get("COURSE_REPORT_SCREENSHOT") or tmp_path).resolve() / "report.png"
        subprocess.run([str(CHROMIUM), *CHROMIUM_ARGS, f"--screenshot={shot}", "--window-size=1200,1600",
                        page.as_uri()], capture_output=True, timeout=120)
        assert shot.exists() and shot.stat().st_size > 20000


def test_similarity_runs_on_the_class(semester, capsys):
    _, course_folder = semester
    assert course(["similarity", ASSIGNMENT, "--course", str(course_folder.root)]) == 0
    out = capsys.readouterr().out
    assert "submissions compared" in out
    assert (Path(course_folder.root) / "reports" / f"{ASSIGNMENT}-similarity.html").exists()
