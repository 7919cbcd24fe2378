"""The grading service's intake (service/intake.py) against what a student can put in the
exchange's inbound/: one folder's failure stays that folder's, unfinished folders wait, sizes
and reads are bounded. Cheap: real folders, a real SQLite queue, no grading."""
from __future__ import annotations

import datetime
import json
import secrets
import time

import nbformat
import pytest

from course_tools.build import release_notebook
from course_tools.course_dir import Course, init_course
from course_tools.notebook_metadata import problems
from course_tools.service import intake as intake_module
from course_tools.service.intake import LOOK_SECONDS, Intake
from course_tools.service.publish import feedback_folder, feedback_names_of_secret
from course_tools.service.queue import DONE, GRADING_ERROR, QUEUED, Queue

A = "01_forward_ops"


@pytest.fixture
def course(tmp_path) -> Course:
    course = init_course(tmp_path / "course", "demo", tmp_path / "exchange")
    inbound = course.exchange / "demo" / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    inbound.chmod(0o2733)   # as nbgrader's release makes it (course collect refuses a listable one)
    return course


@pytest.fixture
def queue(course):
    queue = Queue(course.db_url)
    yield queue
    queue.close()


def submit(course: Course, student: str, nb=None, secret: str | None = None, stamp: str | None = None) -> str:
    """A folder as nbgrader's submit leaves it in inbound/ (the blank release unless ``nb``); its name."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    name = f"{student}+{A}+{now}+{secrets.token_hex(4)}"
    folder = course.exchange / "demo" / "inbound" / name
    folder.mkdir()
    nbformat.write(nb or nbformat.read(str(release_notebook(A)), as_version=4), str(folder / f"{A}.ipynb"))
    (folder / "timestamp.txt").write_text(now if stamp is None else stamp)
    (folder / "submission_secret.txt").write_text(secrets.token_hex(64) if secret is None else secret)
    return name


def scan(course: Course, queue: Queue, policy=None) -> list[int]:
    """The rows two scans LOOK_SECONDS apart enqueue (the intake takes a folder when two looks agree)."""
    from course_tools.service.policy import Policy

    looks = {}
    new = Intake(course, queue, [A], lambda assignment: policy or Policy(), looks).scan()
    time.sleep(LOOK_SECONDS + 0.05)
    return new + Intake(course, queue, [A], lambda assignment: policy or Policy(), looks).scan()


def _by_folder(queue: Queue) -> dict:
    return {r["folder"]: r for r in queue.rows()}


# ---------------------------------------------------------------------------------- one folder's failure
def test_a_folder_whose_intake_fails_becomes_that_folders_error_and_the_classmate_is_queued(course, queue,
                                                                                            monkeypatch, capsys):
    """Whatever fails on one folder (here the result key raises, as a list grade_id made it
    raise before the metadata's types were checked), the scan goes on: the classmate is queued,
    the folder is an error row that `course status` lists and that no later scan takes again."""
    from course_tools.cli import main as course_command

    bad, good = submit(course, "mallory"), submit(course, "ben")
    real = intake_module.result_key

    def fails_for_mallory(assignment, notebook, settings=None):
        if "mallory" in str(notebook):
            raise TypeError("unhashable type: 'list'")
        return real(assignment, notebook, settings)

    monkeypatch.setattr(intake_module, "result_key", fails_for_mallory)
    assert len(scan(course, queue)) == 1
    rows = _by_folder(queue)
    assert rows[good]["state"] == QUEUED
    assert rows[bad]["state"] == GRADING_ERROR and "TypeError: unhashable type: 'list'" in rows[bad]["error"]
    assert scan(course, queue) == []            # not taken again, not failing again
    capsys.readouterr()
    assert course_command(["status", "--course", str(course.root)]) == 0
    assert f"GRADING ERROR mallory {A} ({bad}): the grading service could not take it in" in capsys.readouterr().out


MALFORMED = {
    "grade_id_a_list": lambda cell: cell.metadata.nbgrader.__setitem__("grade_id", ["forward_add"]),
    "nbgrader_a_string": lambda cell: cell.metadata.__setitem__("nbgrader", "locked"),
    "points_a_string": lambda cell: cell.metadata.nbgrader.__setitem__("points", "10"),
    "locked_a_list": lambda cell: cell.metadata.nbgrader.__setitem__("locked", [True]),
    "course_a_list": lambda cell: cell.metadata.__setitem__("course", ["demonstration"]),
}


@pytest.mark.parametrize("edit", MALFORMED, ids=list(MALFORMED))
def test_metadata_of_a_type_nbgrader_never_writes_is_the_students_error_naming_the_cell(course, queue, edit):
    """Each malformed field (valid nbformat: nbgrader's metadata is an open object) is named to
    the student, and the intake queues the folder (its grading says what is wrong) instead of
    failing in whatever reads the field."""
    from course_tools.grading.session.session import StudentError, read_notebook

    nb = nbformat.read(str(release_notebook(A)), as_version=4)
    index, cell = next((i, c) for i, c in enumerate(nb.cells, 1) if c.metadata.get("nbgrader", {}).get("locked"))
    MALFORMED[edit](cell)
    assert any(p.startswith(f"cell {index}: metadata.") for p in problems(nb))
    name = submit(course, "mallory", nb)
    assert len(scan(course, queue)) == 1 and _by_folder(queue)[name]["state"] == QUEUED
    with pytest.raises(StudentError, match=f"cell metadata that nbgrader never writes: cell {index}: metadata"):
        read_notebook(course.root / ".service" / "submissions" / name / f"{A}.ipynb")


def test_every_release_notebook_has_the_metadata_types_the_check_expects():
    from course_lib.tasks import ASSIGNMENTS

    for assignment in ASSIGNMENTS:
        assert problems(nbformat.read(str(release_notebook(assignment)), as_version=4)) == [], assignment


# ---------------------------------------------------------------------------------- bounded reads and copies
def test_a_huge_timestamp_is_read_only_as_far_as_a_timestamp_goes_by_the_intake_and_by_collect(course, queue):
    """nbgrader writes 30 bytes; the date parser's cost grows with the square of what it is given
    (a 700 kB timestamp.txt stalled the intake and `course collect` for minutes). Both read at most
    a timestamp's length: the time recorded is then the exchange's."""
    from course_tools.cli import main as course_command

    name = submit(course, "mallory", stamp="2026-12-03 " + "1" * 300_000)
    start = time.monotonic()
    assert len(scan(course, queue)) == 1
    assert course_command(["collect", A, "--course", str(course.root)]) == 0
    seconds = time.monotonic() - start
    assert seconds < 10, f"intake and collect took {seconds:.1f} s"
    copied = course.root / "submitted" / "mallory" / A / "timestamp.txt"
    assert len(copied.read_text()) < 40 and _by_folder(queue)[name]["state"] == QUEUED


def test_sparse_files_beyond_a_submissions_size_are_refused_with_the_students_page_saying_why(course, queue):
    """Four sparse 64 MB files (kB on disk) became 256 MB in the service's copy and 256 MB more in
    submitted/. A submission's files together are bounded (MAX_SUBMISSION_BYTES, by their size as
    read): the folder is refused once, its student's page says what was expected, collect
    refuses it too; a sparse file within the bound is copied as a sparse file."""
    from course_tools.cli import main as course_command

    secret = secrets.token_hex(64)
    big = submit(course, "mallory", secret=secret)
    for n in range(4):
        with open(course.exchange / "demo" / "inbound" / big / f"data{n}.bin", "wb") as sparse:
            sparse.truncate(64 * 1024 ** 2)
    small = submit(course, "ben")
    with open(course.exchange / "demo" / "inbound" / small / "data.bin", "wb") as sparse:
        sparse.truncate(16 * 1024 ** 2)
    assert len(scan(course, queue)) == 1
    rows = _by_folder(queue)
    assert rows[small]["state"] == QUEUED
    copied = course.root / ".service" / "submissions" / small / "data.bin"
    assert copied.stat().st_size == 16 * 1024 ** 2 and copied.stat().st_blocks * 512 < 1024 ** 2
    assert (rows[big]["state"], rows[big]["outcome"]) == (DONE, "refused")
    assert "more than 64 MB in all" in rows[big]["error"]
    assert not (course.root / ".service" / "submissions" / big).exists()
    (page,) = feedback_names_of_secret(secret, [A]).values()
    text = (feedback_folder(course.exchange, "demo") / page).read_text()
    assert "cannot be graded" in text and "more than 64 MB in all" in text and "as it was fetched" in text
    assert scan(course, queue) == []   # refused once, not copied again at every scan
    assert course_command(["collect", A, "--course", str(course.root)]) == 1   # collect refuses it too
    assert not [p for p in (course.root / "submitted").rglob("*") if p.is_file() and "mallory" in str(p)]


# ---------------------------------------------------------------------------------- one student's flood
class TakesItsTime:
    """A launcher that grades every notebook in ``seconds`` (the stand-in for a real grading,
    whose time here is all that matters), full marks on one task."""
    def __init__(self, seconds: float):
        self.seconds = seconds

    def grade(self, assignment, notebook, settings=None):
        time.sleep(self.seconds)
        return {"assignment": assignment, "tasks": {"forward_add": {"score": 1.0, "points": 1.0, "checks": []}}}


def _variant(tag: str):
    nb = nbformat.read(str(release_notebook(A)), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"tag = {tag!r}"))
    return nb


def test_a_flood_of_one_students_submissions_is_capped_and_a_classmate_waits_one_grading(course, queue):
    """mallory copies her inbound folder (each copy another program: each a grading) 8 times,
    then ben submits once; one worker, each grading 0.5 s. mallory has at most max_queued (3)
    waiting, the rest are held with a page saying why, and ben's submission is graded after at
    most the grading under way and one more, not after her backlog."""
    from course_tools.grading.settings import GradingSettings
    from course_tools.service.policy import Policy
    from course_tools.service.queue import claimant
    from course_tools.service.worker import Worker

    secret = secrets.token_hex(64)
    flood = [submit(course, "mallory", _variant(f"flood-{n}"), secret=secret if n == 7 else None) for n in range(8)]
    policy = Policy(max_queued=3)
    scan(course, queue, policy)
    rows = _by_folder(queue)
    assert [rows[f]["state"] for f in flood] == [QUEUED] * 3 + [DONE] * 5
    assert {rows[f]["outcome"] for f in flood[3:]} == {"held"}
    (page,) = feedback_names_of_secret(secret, [A]).values()
    assert "You have 3 submissions of 01_forward_ops waiting to be graded" in (
        feedback_folder(course.exchange, "demo") / page).read_text()

    worker = Worker(course, queue, GradingSettings(), lambda assignment: policy, claimant(), TakesItsTime(0.5))
    assert worker.work_one()                     # mallory's first grading is under way when ben submits
    honest = submit(course, "ben", _variant("ben"))
    scan(course, queue, policy)
    while worker.work_one():
        pass
    rows = _by_folder(queue)
    order = sorted(rows.values(), key=lambda r: r["started_at"] or datetime.datetime.max)
    graded = [r["student"] for r in order if r["outcome"] == "graded"]
    assert graded == ["mallory", "ben", "mallory", "mallory"]
    ben = rows[honest]
    wait = (ben["finished_at"] - ben["enqueued_at"]).total_seconds()
    mallory = [(rows[f]["finished_at"] - rows[f]["enqueued_at"]).total_seconds() for f in flood[:3]]
    print(f"ben's wait beside mallory's flood: {wait:.2f} s (mallory's: {', '.join(f'{w:.2f}' for w in mallory)} s)")
    assert wait < 3 * 0.5 + 1.0


# ---------------------------------------------------------------------------------- unfinished folders
def test_an_unfinished_submission_is_taken_only_once_its_secret_is_written_and_it_has_settled(course, queue):
    """nbgrader's submit creates submission_secret.txt before it writes it: a folder read in that
    window was graded, but its page could never be published (no secret, no name). The intake
    waits for a well-formed secret and two looks that agree."""
    name = submit(course, "ada", secret="")                  # the secret's file created, not written yet
    assert scan(course, queue) == [] and _by_folder(queue) == {}
    secret = secrets.token_hex(64)
    (course.exchange / "demo" / "inbound" / name / "submission_secret.txt").write_text(secret)
    assert len(scan(course, queue)) == 1
    row = _by_folder(queue)[name]
    assert json.loads(row["feedback_names"]) == feedback_names_of_secret(secret, [A])


def test_a_queued_folder_that_changes_after_it_was_taken_is_read_again(course, queue):
    name = submit(course, "ada")
    assert len(scan(course, queue)) == 1
    before = _by_folder(queue)[name]["fingerprint"]
    time.sleep(0.05)
    nbformat.write(_variant("written after the intake took it"),
                   str(course.exchange / "demo" / "inbound" / name / f"{A}.ipynb"))
    assert scan(course, queue) == []                         # no second row: the same one, read again
    row = _by_folder(queue)[name]
    assert row["state"] == QUEUED and row["fingerprint"] not in (None, before) and row["lease_until"] is None
    copied = course.root / ".service" / "submissions" / name / f"{A}.ipynb"
    assert "written after the intake took it" in copied.read_text()
