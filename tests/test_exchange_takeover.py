"""The exchange against a student who wants to take it over (course_tools/exchange_folders.py).

`course init` makes the exchange 01777 as nbgrader expects: a student's account (made as the
hub makes them) can no longer move the course's folder aside. On an exchange without the sticky
bit (as `course init` made it before, or a careless deployment), the student moves it aside and
plants their own course folder with inbound/, outbound/ and feedback/: `course collect` and
`course serve` refuse, naming the folder and what is wrong, and put nothing into it.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from grading_support import another_account
from service_support import COURSE_SCRIPT

from course_tools.cli import main as course
from course_tools.course_dir import init_course
from course_tools.exchange_folders import ExchangeTakeover, check_course

STUDENT = "xchg-eve"
COURSE_ID = "demo"


@pytest.fixture(scope="module")
def student():
    yield from another_account(STUDENT)


@pytest.fixture
def exchange(student):
    """A course made by `course init` (without the student install) whose exchange holds the
    course's folders as nbgrader's release makes them; a world-reachable base, so that the
    student's account can reach the exchange."""
    base = Path(tempfile.mkdtemp(prefix="course-takeover-test-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        folder = init_course(base / "course", COURSE_ID, exchange=base / "exchange").root
        ours = base / "exchange" / COURSE_ID
        for path, mode in ((ours, 0o755), (ours / "outbound", 0o755), (ours / "inbound", 0o2733),
                           (ours / "feedback", 0o711)):
            path.mkdir()
            path.chmod(mode)
        yield folder, base / "exchange"
    finally:
        shutil.rmtree(base)


def _as(account: str, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", account, "--", *command], capture_output=True, text=True, timeout=30, check=False)


def _refusals(folder: Path, capsys) -> tuple[str, str]:
    """What `course collect` and `course serve --once` say (both must refuse)."""
    assert course(["collect", "01_forward_ops", "--course", str(folder)]) != 0
    collect = capsys.readouterr().err
    served = subprocess.run([COURSE_SCRIPT, "serve", "--once", "--course", str(folder)], capture_output=True,
                            text=True, timeout=300, check=False)
    assert served.returncode != 0, served.stdout + served.stderr
    return collect, served.stdout + served.stderr


def test_init_makes_an_exchange_whose_course_folder_a_student_cannot_move_aside(exchange, student):
    _, root = exchange
    info = root.stat()
    assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o1777, os.geteuid())
    moved = _as(student, "mv", str(root / COURSE_ID), str(root / "aside"))
    assert moved.returncode != 0 and (root / COURSE_ID).is_dir() and not (root / "aside").exists()
    assert _as(student, "mkdir", str(root / "mine")).returncode == 0   # adding their own entry is allowed
    check_course(root, COURSE_ID)


def test_a_planted_course_folder_is_refused_by_collect_and_serve(exchange, student, capsys):
    folder, root = exchange
    root.chmod(0o777)   # as `course init` used to make it
    collect, served = _refusals(folder, capsys)
    for said in (collect, served):
        assert f"the exchange {root} is writable by every account without the sticky bit" in said, said[-2000:]

    assert _as(student, "mv", str(root / COURSE_ID), str(root / "aside")).returncode == 0
    for part in ("", "/inbound", "/outbound", "/feedback"):
        assert _as(student, "mkdir", "-m", "0777", f"{root / COURSE_ID}{part}").returncode == 0
    root.chmod(0o1777)  # the root mended: the planted folder is still there
    collect, served = _refusals(folder, capsys)
    for said in (collect, served):
        assert f"the exchange folder {root / COURSE_ID} is owned by {student}, not by the grader" in said, said[-2000:]
    assert not any((root / COURSE_ID / "feedback").iterdir()), "a page was published into the student's folder"


@pytest.mark.parametrize("part, mode, wrong", [
    ("outbound", 0o777, "is writable by other accounts"),
    ("inbound", 0o2777, "can be listed by other accounts"),
    ("feedback", 0o755, "can be listed by other accounts"),
    ("", 0o775, "is writable by other accounts"),
])
def test_an_exchange_folder_open_to_others_is_refused_naming_it(exchange, part, mode, wrong):
    _, root = exchange
    path = root / COURSE_ID / part if part else root / COURSE_ID
    path.chmod(mode)
    with pytest.raises(ExchangeTakeover, match=f"{path} {wrong}"):
        check_course(root, COURSE_ID)


def test_a_linked_exchange_folder_is_refused(exchange):
    _, root = exchange
    inbound = root / COURSE_ID / "inbound"
    inbound.rename(root / "elsewhere")
    inbound.symlink_to(root / "elsewhere")
    with pytest.raises(ExchangeTakeover, match=f"{inbound} is a symbolic link"):
        check_course(root, COURSE_ID)
