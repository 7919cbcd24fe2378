"""Hostile students through nbgrader's real exchange, with real Unix accounts, and `course collect`.

Two student accounts (made and removed as the hub's are: course_tools/hub/accounts.py) run
nbgrader's own fetch_assignment and submit as themselves, from the system Python every account
can run, then change what they own in the exchange by hand:

    exch-ada  submits the complete, correct work on time;
    exch-ben  submits the blank release on time, then in exch-ada's name (nbgrader's submit
              --student), then a submission whose notebook he replaces with a symlink to the
              solution, then one with a FIFO in it;
    exch-ada  after the deadline submits again, empties her timestamp.txt, renames her folder to
              claim a time before the deadline and touches its files back.

`course collect`, `course grade`, `course feedback`, `course status` and `course report` must
collect ada's genuine work (full marks) and ben's genuine blank one (nothing), report the spoof,
the link and the FIFO, let nothing of the solution reach the gradebook or the feedback, and
record ada's late work as late, with the late penalty.
"""
from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from conftest import gradebook_task_scores
from course_tools.build import release_notebook
from course_tools.cli import main as course
from course_tools.course_dir import ROOT, Course, init_course
from course_tools.demo_class import blank, filled_release
from course_tools.grading.suite.run import graded_tasks
from course_tools.inbound import load_refusals

ASSIGNMENT = "01_forward_ops"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
POINTS = graded_tasks(release_notebook(ASSIGNMENT))
TOTAL = sum(POINTS.values())
ADA, BEN = "exch-ada", "exch-ben"
SOLUTION = ROOT / "solutions" / ASSIGNMENT / NOTEBOOK

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _utc(delta: datetime.timedelta = datetime.timedelta()) -> str:
    return (datetime.datetime.now(datetime.timezone.utc) + delta).strftime("%Y-%m-%d %H:%M:%S UTC")


class Students:
    """Real accounts that run nbgrader from the system Python, with this environment's packages."""

    def __init__(self, exchange: Path):
        from course_tools.hub import accounts
        from course_tools.hub.envs import base_python

        self.python = str(base_python())
        self.exchange = exchange
        self.packages = sysconfig.get_paths()["purelib"]
        self.entries = {entry.pw_name: entry for entry in accounts.create([ADA, BEN])}

    def home(self, student: str) -> Path:
        return Path(self.entries[student].pw_dir)

    def run(self, student: str, *command: str) -> str:
        """``command`` as ``student``, in their home (nbgrader's `--student` never given unless asked)."""
        env = {"HOME": str(self.home(student)), "USER": student, "LOGNAME": student, "PATH": "/usr/bin:/bin",
               "PYTHONPATH": self.packages, "JUPYTER_CONFIG_DIR": str(self.home(student) / ".jupyter")}
        result = subprocess.run([shutil.which("runuser"), "-u", student, "--", *command], cwd=self.home(student), env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{student}: {' '.join(command)}\n{result.stdout}\n{result.stderr}"
        return result.stdout + result.stderr

    def nbgrader(self, student: str, step: str, *args: str) -> str:
        return self.run(student, self.python, "-m", "nbgrader", step, ASSIGNMENT, "--course=demo",
                        f"--Exchange.root={self.exchange}", *args)

    def work(self, student: str, notebook: nbformat.NotebookNode) -> None:
        """The student's notebook in their fetched folder (written for them, owned by them)."""
        path = self.home(student) / ASSIGNMENT / NOTEBOOK
        nbformat.write(notebook, str(path))
        os.chown(path, self.entries[student].pw_uid, self.entries[student].pw_gid)

    def newest_folder(self, student_named: str) -> Path:
        folders = sorted((self.exchange / "demo" / "inbound").glob(f"{student_named}+{ASSIGNMENT}+*"),
                         key=lambda p: p.stat().st_ctime)
        return folders[-1]

    def remove(self) -> None:
        from course_tools.hub import accounts

        accounts.remove([ADA, BEN])


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "making student accounts needs root"
    if not shutil.which("runuser") or not shutil.which("useradd"):
        return "runuser and useradd (util-linux, passwd) are needed"
    from course_tools.hub.envs import EnvError, base_python

    try:
        base_python()
    except EnvError as err:
        return str(err)
    return None


@pytest.fixture(scope="module")
def semester():
    missing = _missing()
    if missing:
        pytest.skip(missing)
    # World-reachable (pytest's own tmp folders are root's only): the students write into the exchange.
    base = Path(tempfile.mkdtemp(prefix="course-exchange-test-", dir="/var/tmp"))
    base.chmod(0o755)
    students = None
    try:
        students = Students(base / "exchange")
        yield run_semester(base, students)
    finally:
        if students is not None:
            students.remove()
        shutil.rmtree(base, ignore_errors=True)


def run_semester(base: Path, students: Students) -> dict:
    folder = str(base / "course")
    said = {}
    init_course(Path(folder), "demo", students.exchange)  # `course init` without building the student install
    assert course(["release", ASSIGNMENT, "--course", folder, "--due", _utc(datetime.timedelta(days=7))]) == 0
    for student in (ADA, BEN):
        students.nbgrader(student, "fetch_assignment")
    students.work(ADA, filled_release(ASSIGNMENT))
    students.nbgrader(ADA, "submit")
    students.work(BEN, blank(ASSIGNMENT))
    students.nbgrader(BEN, "submit")
    ben_genuine = students.newest_folder(BEN).name
    students.nbgrader(BEN, "submit", f"--student={ADA}")            # in ada's name, later than hers
    spoof = students.newest_folder(ADA).name
    students.nbgrader(BEN, "submit")
    linked = students.newest_folder(BEN)
    students.run(BEN, "ln", "-sf", str(SOLUTION), str(linked / NOTEBOOK))
    students.nbgrader(BEN, "submit")
    with_fifo = students.newest_folder(BEN)
    students.run(BEN, "mkfifo", str(with_fifo / "notes.txt"))

    said["first collect"] = _course(["collect", ASSIGNMENT, "--course", folder], expect=1)
    said["refused"] = {r.folder: r for r in load_refusals(Path(folder), ASSIGNMENT)}
    said["folders"] = {"ben genuine": ben_genuine, "spoof": spoof, "linked": linked.name, "fifo": with_fifo.name}
    assert course(["grade", ASSIGNMENT, "--course", folder, "--workers", "2"]) == 0
    assert course(["feedback", ASSIGNMENT, "--course", folder]) == 0
    said["first scores"] = _scores(Course(Path(folder)))
    # The feedback pages (the folder also holds the release's course_lib, whose docstrings name the markers).
    said["ben's feedback"] = "".join(p.read_text() for p in (base / "course" / "feedback" / BEN).rglob("*.html"))
    students.nbgrader(BEN, "fetch_feedback")
    said["ben fetched"] = "".join(p.read_text() for p in (students.home(BEN) / ASSIGNMENT / "feedback").rglob("*.html"))

    # The deadline passes; ada submits again, then hides when: no timestamp, a name and file
    # times from before the deadline.
    time.sleep(1.5)
    due = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    assert course(["release", ASSIGNMENT, "--course", folder, "--due", f"{due:%Y-%m-%d %H:%M:%S} UTC"]) == 0
    time.sleep(1.5)
    students.nbgrader(ADA, "submit")
    late = students.newest_folder(ADA)
    students.run(ADA, "truncate", "-s", "0", str(late / "timestamp.txt"))
    claimed = (due - datetime.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    backdated = late.with_name(f"{ADA}+{ASSIGNMENT}+{claimed}+x")
    students.run(ADA, "mv", str(late), str(backdated))
    students.run(ADA, "touch", "-d", "2 hours ago", str(backdated), str(backdated / NOTEBOOK))
    arrived = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)  # its last change was before
    said["second collect"] = _course(["collect", ASSIGNMENT, "--course", folder], expect=1)
    assert course(["grade", ASSIGNMENT, "--course", folder, "--workers", "2"]) == 0
    said["late"] = (due, arrived)
    said["status"] = _course(["status", ASSIGNMENT, "--course", folder])
    said["report"] = _course(["report", ASSIGNMENT, "--course", folder])
    said["report page"] = (base / "course" / "reports" / f"{ASSIGNMENT}.html").read_text()
    with Course(Path(folder)).gradebook() as gradebook:
        said["gradebook"] = {s.student_id: (s.total_seconds_late, s.late_submission_penalty or 0.0, s.score)
                             for s in gradebook.assignment_submissions(ASSIGNMENT)}
    return said


def _course(args: list[str], expect: int = 0) -> str:
    """`course ...` in a subprocess (its own output, exit status checked)."""
    result = subprocess.run([sys.executable, "-m", "course_tools.cli", *args],
                            capture_output=True, text=True, timeout=600, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == expect, f"course {' '.join(args)}: {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _scores(course_folder: Course) -> dict[str, dict[str, float]]:
    with course_folder.gradebook() as gradebook:
        return gradebook_task_scores(gradebook, ASSIGNMENT, POINTS)


# ---------------------------------------------------------------------------------- (b) spoofing
def test_a_submission_in_a_classmates_name_is_refused_and_her_own_work_scores(semester):
    spoof = semester["folders"]["spoof"]
    assert "owned by exch-ben, not by the account exch-ada" in semester["refused"][spoof].reason
    assert semester["first scores"][ADA] == POINTS
    assert spoof in semester["first collect"] and "REFUSED" in semester["first collect"]


# ---------------------------------------------------------------------------------- (a) links, FIFOs
def test_a_linked_notebook_and_a_fifo_are_refused_and_nothing_of_the_solution_reaches_anyone(semester):
    folders, refused = semester["folders"], semester["refused"]
    assert "symbolic link" in refused[folders["linked"]].reason
    assert "FIFO" in refused[folders["fifo"]].reason
    assert folders["ben genuine"] not in refused
    assert all(score == 0 for score in semester["first scores"][BEN].values())     # his genuine blank work
    for text in (semester["ben's feedback"], semester["ben fetched"]):
        assert text and "BEGIN SOLUTION" not in text


# ---------------------------------------------------------------------------------- (c) timestamps
def test_late_work_without_a_timestamp_and_with_a_backdated_name_is_late_with_the_penalty(semester):
    due, arrived = semester["late"]
    seconds, penalty, score = semester["gradebook"][ADA]
    assert score == TOTAL
    assert 1.5 < seconds <= (arrived - due).total_seconds() + 1  # submitted 1.5 s after the deadline at least
    assert penalty == pytest.approx(0.1 * TOTAL)                 # one started day late: 10%
    assert semester["gradebook"][BEN][:2] == (0, 0.0)            # his genuine work was on time
    assert "the exchange's time" in semester["second collect"]


# ---------------------------------------------------------------------------------- the instructor is told
def test_status_and_report_tell_the_instructor_what_was_refused(semester):
    for folder in semester["folders"]["spoof"], semester["folders"]["linked"], semester["folders"]["fifo"]:
        assert folder in semester["status"] and folder in semester["report"]
        assert folder in semester["report page"]
    assert "REFUSED" in semester["status"] and "REFUSED" in semester["report"]
