"""`course collect`'s reading of the exchange (course_tools/inbound.py) on real folders and files.

Each hostile folder is what a student can make by hand in the inbound folder they own: links,
special files, hard links, another account's files, a classmate's name, a timestamp.txt that
lies or is missing. Real files, real owners (the test runs as root to chown and mknod), real
ctimes; tests/test_exchange_accounts.py runs the same through nbgrader's exchange with real
student accounts.
"""
from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pytest

from course_tools import inbound
from course_tools.submission_times import FORMAT, TOLERANCE_S, recorded_time

ASSIGNMENT = "01_forward_ops"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
IGNORE = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
STUDENT = "no-such-account-ada"   # no Unix account: the folders must be the collecting account's
OTHER_UID = 65534                  # nobody: another account
GENUINE = '{"cells": [], "who": "genuine work"}'
SOLUTION = '{"cells": [], "who": "### BEGIN SOLUTION the reference"}'

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown and mknod need root")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _submit(inbound_dir: Path, student: str = STUDENT, claimed: datetime.datetime | None = None,
            notebook: str = GENUINE, stamp: str | None = "claimed", suffix: str = "abc") -> Path:
    """A folder as nbgrader's submit makes it: named after the claimed time, with timestamp.txt."""
    claimed = claimed or _now()
    text = claimed.strftime(FORMAT)
    folder = inbound_dir / f"{student}+{ASSIGNMENT}+{text}+{suffix}"
    folder.mkdir(parents=True)
    (folder / NOTEBOOK).write_text(notebook)
    if stamp is not None:
        (folder / "timestamp.txt").write_text(text if stamp == "claimed" else stamp)
    time.sleep(0.02)  # the next folder's ctime is later
    return folder


def _collect(tmp_path: Path, max_bytes: int = 10 ** 6) -> inbound.Outcome:
    return inbound.collect(tmp_path / "inbound", tmp_path / "submitted", ASSIGNMENT, IGNORE, max_bytes)


def _collected_text(tmp_path: Path, student: str = STUDENT) -> str:
    return (tmp_path / "submitted" / student / ASSIGNMENT / NOTEBOOK).read_text()


def _everything_collected(tmp_path: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in (tmp_path / "submitted").rglob("*") if p.is_file())


# ---------------------------------------------------------------------------------- links and special files
def _symlinked_notebook(folder: Path, solution: Path) -> None:
    (folder / NOTEBOOK).unlink()
    (folder / NOTEBOOK).symlink_to(solution)


def _symlinked_folder(folder: Path, solution: Path) -> None:
    (folder / "data").symlink_to(solution.parent, target_is_directory=True)


def _fifo(folder: Path, solution: Path) -> None:
    os.mkfifo(folder / "notes.txt")


def _hard_link(folder: Path, solution: Path) -> None:
    (folder / NOTEBOOK).unlink()
    os.link(solution, folder / NOTEBOOK)


def _device(folder: Path, solution: Path) -> None:
    os.mknod(folder / "null", 0o666 | 0o020000, os.makedev(1, 3))  # a character device, like /dev/null


def _foreign_file(folder: Path, solution: Path) -> None:
    os.chown(folder / NOTEBOOK, OTHER_UID, OTHER_UID)


def _nested_link(folder: Path, solution: Path) -> None:
    (folder / "sub" / "deeper").mkdir(parents=True)
    (folder / "sub" / "deeper" / "x.ipynb").symlink_to(solution)


HOSTILE = {"notebook is a symlink to the solution": (_symlinked_notebook, "symbolic link"),
           "a folder is a symlink": (_symlinked_folder, "symbolic link"),
           "a FIFO": (_fifo, "FIFO"),
           "notebook is a hard link to the solution": (_hard_link, "hard links"),
           "a device": (_device, "device"),
           "a file of another account": (_foreign_file, "owned by nobody"),
           "a link deep inside": (_nested_link, "symbolic link")}


@needs_root
@pytest.mark.timeout(60)  # a FIFO that was opened would block here
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_folder_with_a_link_or_special_file_is_refused_and_the_earlier_genuine_one_collected(tmp_path, case):
    make, reason = HOSTILE[case]
    solution = tmp_path / "solutions" / NOTEBOOK
    solution.parent.mkdir()
    solution.write_text(SOLUTION)
    genuine = _submit(tmp_path / "inbound", claimed=_now(), suffix="one")
    hostile = _submit(tmp_path / "inbound", claimed=_now(), notebook="{}", suffix="two")
    make(hostile, solution)

    outcome = _collect(tmp_path)

    assert [(r.folder, r.student) for r in outcome.refused] == [(hostile.name, STUDENT)]
    assert reason in outcome.refused[0].reason
    assert [(c.student, c.folder) for c in outcome.collected] == [(STUDENT, genuine.name)]
    assert _collected_text(tmp_path) == GENUINE
    assert "BEGIN SOLUTION" not in _everything_collected(tmp_path)


@needs_root
def test_a_student_whose_only_folder_is_refused_has_nothing_collected(tmp_path):
    solution = tmp_path / "solution.ipynb"
    solution.write_text(SOLUTION)
    folder = _submit(tmp_path / "inbound")
    _symlinked_notebook(folder, solution)
    outcome = _collect(tmp_path)
    assert outcome.collected == [] and [r.folder for r in outcome.refused] == [folder.name]
    assert not (tmp_path / "submitted" / STUDENT / ASSIGNMENT).exists()


def test_a_symlink_in_place_of_the_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / NOTEBOOK).write_text(SOLUTION)
    (tmp_path / "inbound").mkdir()
    (tmp_path / "inbound" / f"{STUDENT}+{ASSIGNMENT}+{_now().strftime(FORMAT)}+x").symlink_to(elsewhere)
    outcome = _collect(tmp_path)
    assert outcome.collected == [] and "symbolic link" in outcome.refused[0].reason


def test_ignored_and_oversized_files_are_left_out_like_nbgrader(tmp_path):
    folder = _submit(tmp_path / "inbound")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "old.ipynb").write_text("{}")
    (folder / "weights.bin").write_bytes(b"0" * 5000)
    (outcome,) = _collect(tmp_path, max_bytes=4096).collected
    collected = tmp_path / "submitted" / STUDENT / ASSIGNMENT
    assert sorted(p.name for p in collected.iterdir()) == [NOTEBOOK, "timestamp.txt"]
    assert outcome.left_out and "weights.bin" in outcome.left_out[0]


# ---------------------------------------------------------------------------------- whose folder
@needs_root
def test_a_folder_in_a_classmates_name_is_refused_and_the_classmates_own_work_collected(tmp_path):
    genuine = _submit(tmp_path / "inbound", notebook=GENUINE, suffix="mine")
    spoof = _submit(tmp_path / "inbound", notebook="{}", suffix="spoof")  # later: nbgrader would take it
    for path in [spoof, *spoof.iterdir()]:
        os.chown(path, OTHER_UID, OTHER_UID, follow_symlinks=False)
    outcome = _collect(tmp_path)
    assert [c.folder for c in outcome.collected] == [genuine.name]
    assert _collected_text(tmp_path) == GENUINE
    (refusal,) = outcome.refused
    assert refusal.folder == spoof.name and "owned by nobody" in refusal.reason


@needs_root
def test_a_student_with_an_account_must_own_the_folder_in_their_name(tmp_path):
    """'nobody' is a Unix account: a folder in its name made by another account (root) is refused."""
    folder = _submit(tmp_path / "inbound", student="nobody")
    outcome = _collect(tmp_path)
    assert outcome.collected == [] and "not by the account nobody" in outcome.refused[0].reason
    for path in [folder, *folder.iterdir()]:
        os.chown(path, OTHER_UID, OTHER_UID)
    assert [c.student for c in _collect(tmp_path).collected] == ["nobody"]


def test_a_later_collect_replaces_the_collected_copy_with_the_latest_genuine_folder(tmp_path):
    _submit(tmp_path / "inbound", notebook='{"v": 1}', suffix="one")
    _collect(tmp_path)
    _submit(tmp_path / "inbound", notebook='{"v": 2}', suffix="two")
    _collect(tmp_path)
    assert _collected_text(tmp_path) == '{"v": 2}'
    assert [p.name for p in (tmp_path / "submitted" / STUDENT).iterdir()] == [ASSIGNMENT]  # no staging left


# ---------------------------------------------------------------------------------- when it arrived
STAMPS = {"missing": None, "empty": "", "garbage": "yesterday, honest", "future-dated": "2999-01-01 00:00:00.000000 UTC",
          "backdated": "2020-01-01 00:00:00.000000 UTC"}


@pytest.mark.parametrize("case", list(STAMPS))
def test_an_unreadable_or_lying_timestamp_counts_from_when_the_exchange_saw_the_folder(tmp_path, case):
    """The deadline passed an hour ago; the folder arrives now. Its name claims it came before the
    deadline (backdated, like its timestamp.txt), so only the exchange's ctime says it is late."""
    due = _now() - datetime.timedelta(hours=1)
    before_deadline = due - datetime.timedelta(minutes=5)
    folder = _submit(tmp_path / "inbound", claimed=before_deadline, stamp=STAMPS[case])
    old = time.time() - 7200
    os.utime(folder / NOTEBOOK, (old, old))  # mtime is the student's to set; ctime is not
    os.utime(folder, (old, old))
    arrived = _now()
    (got,) = _collect(tmp_path).collected
    late = (got.recorded - due).total_seconds()
    assert late == pytest.approx(3600, abs=60)
    assert abs((got.recorded - arrived).total_seconds()) < 30
    assert got.note
    written = (tmp_path / "submitted" / STUDENT / ASSIGNMENT / "timestamp.txt").read_text()
    assert written == got.recorded.strftime(FORMAT)


def test_an_honest_timestamp_is_kept():
    received = _now()
    claimed = received - datetime.timedelta(seconds=3)
    assert recorded_time([claimed, claimed], received) == (claimed, "")
    assert recorded_time([None, claimed], received) == (claimed, "")     # the name's time alone will do
    assert recorded_time([claimed - datetime.timedelta(seconds=TOLERANCE_S + 1)], received)[0] == received
    assert recorded_time([received + datetime.timedelta(hours=1)], received)[0] == received



# ---------------------------------------------------------------------------------- formgrader's collect
def test_nbgraders_own_collect_goes_through_the_same_checks(tmp_path):
    """Formgrader's Collect button runs nbgrader's collect: the course's configuration puts
    inbound.collect in its place, with the same refusals kept for `course status`."""
    from course_tools.course_dir import init_course

    course = init_course(tmp_path / "course", "demo", tmp_path / "exchange")
    inbound_dir = tmp_path / "exchange" / "demo" / "inbound"
    genuine = _submit(inbound_dir, suffix="one")
    hostile = _submit(inbound_dir, notebook="{}", suffix="two")
    _symlinked_notebook(hostile, tmp_path / "course" / "nbgrader_config.py")
    outcome = course.api().collect(ASSIGNMENT)  # what formgrader's button calls, in its process
    assert outcome["success"], outcome
    assert "REFUSED" in outcome["log"] and hostile.name in outcome["log"]
    assert (course.folder("submitted") / STUDENT / ASSIGNMENT / NOTEBOOK).read_text() == GENUINE
    assert [r.folder for r in inbound.load_refusals(course.root, ASSIGNMENT)] == [hostile.name]
    assert genuine.name not in {r.folder for r in inbound.load_refusals(course.root, ASSIGNMENT)}
