"""Who can reach hidden material (course_tools/access.py), checked against what a real student
account can actually open, and `course init`'s private course folder (seconds; needs root).

Every verdict of ``exposures`` is compared with a real read as the student (setpriv), so the
check and the kernel never disagree; and the chmod each refusal names is run, after which the
student is refused for real.
"""
from __future__ import annotations

import grp
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from course_tools import access
from course_tools.course_dir import CourseError, find_course, init_course
from course_tools.hub import accounts
from course_tools.hub.deploy import as_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making Unix accounts needs root")
STUDENT, GROUP = "demo-access-stu", "demo-access-grp"


@pytest.fixture(scope="module")
def student():
    """A real student account, also in a second group (as a course's "students" group would be)."""
    accounts.create([STUDENT])
    subprocess.run(["groupadd", GROUP], check=True)
    try:
        subprocess.run(["usermod", "--append", "--groups", GROUP, STUDENT], check=True)
        yield access.account(STUDENT)
    finally:
        accounts.remove([STUDENT])
        subprocess.run(["groupdel", GROUP], check=True)


@pytest.fixture
def open_folder():
    """A folder every account can enter (tmp_path lies under a 0700 folder, closed to all)."""
    folder = Path(tempfile.mkdtemp(prefix="course-access-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def _student_opens(path: Path) -> bool:
    """Whether the student account really reads ``path`` (lists it, for a folder)."""
    command = ["ls", str(path)] if path.is_dir() else ["head", "-c1", str(path)]
    return as_user(STUDENT, command, cwd=Path("/")).returncode == 0


def _bundle(folder: Path) -> Path:
    (folder / "autograder" / "04_conv_backward").mkdir(parents=True)
    (folder / "autograder" / "04_conv_backward" / "test_conv_backward.py").write_text("SECRET = 1\n")
    (folder / "gradebook.db").write_text("grades\n")
    return folder


def test_an_open_checkout_is_named_with_the_chmod_that_closes_it(student, open_folder):
    bundle = _bundle(open_folder / "checkout")
    hidden = {bundle: "the bundle", bundle / "autograder": "hidden suites", bundle / "gradebook.db": "the gradebook"}
    suite = bundle / "autograder" / "04_conv_backward" / "test_conv_backward.py"
    assert _student_opens(suite) and _student_opens(bundle / "gradebook.db")
    (found,) = access.exposures(hidden, [student])  # the paths inside it are closed with it
    assert (found.path, found.classes, found.fix) == (bundle, "o", f"chmod o-rwx {bundle}")
    message = access.refusal([found], "the hub does not start")
    assert f"    chmod o-rwx {bundle}" in message.splitlines() and STUDENT in message
    subprocess.run(shlex.split(found.fix), check=True)
    assert access.exposures(hidden, [student]) == []
    assert not _student_opens(suite) and not _student_opens(bundle / "gradebook.db")


def test_a_group_the_student_is_in_counts_and_a_closed_parent_closes_everything(student, open_folder):
    bundle = _bundle(open_folder / "checkout")
    os.chown(bundle, 0, grp.getgrnam(GROUP).gr_gid)
    bundle.chmod(0o750)  # closed to others, open to a group the student was added to
    (found,) = access.exposures({bundle: "the bundle"}, [access.OTHERS, student])
    assert (found.classes, found.who, found.fix) == ("g", (STUDENT,), f"chmod g-rwx {bundle}")
    assert _student_opens(bundle)
    bundle.chmod(0o710)  # enter-only: a known name inside opens without a listing
    assert access.exposures({bundle: "the bundle"}, [student]) and _student_opens(bundle / "gradebook.db")
    subprocess.run(shlex.split(found.fix), check=True)
    assert access.exposures({bundle: "the bundle"}, [student]) == [] and not _student_opens(bundle / "gradebook.db")
    # Wide open below a folder the student cannot pass: unreachable, and nothing to report.
    inner = _bundle(open_folder / "private" / "inner")
    inner.chmod(0o777)
    (open_folder / "private").chmod(0o700)
    assert access.exposures({inner: "the bundle", inner / "gradebook.db": "the gradebook"}, [student]) == []
    assert not _student_opens(inner / "gradebook.db")


def test_course_init_makes_the_course_folder_private_and_refuses_an_open_one(student, open_folder, capsys):
    from course_tools.cli import main as course_command

    folder = open_folder / "semester" / "dlsys"
    roster = open_folder / "roster.csv"
    roster.write_text("username,role,first_name,last_name\nprof,instructor,Grace,Hopper\n"
                      "demo-access-stu,student,Ada,Lovelace\n")
    assert course_command(["init", str(folder), "--course-id", "dlsys-test", "--exchange", str(open_folder / "exchange"),
                           "--roster", str(roster)]) == 0
    course = find_course(folder)
    with course.gradebook() as gradebook:  # formgrader shows graders these names, not "None, None"
        assert [(s.id, s.first_name, s.last_name) for s in gradebook.students] == [(STUDENT, "Ada", "Lovelace")]
    assert "1 student in the gradebook" in capsys.readouterr().out
    assert (course.root.stat().st_mode & 0o777) == 0o700
    assert (open_folder / "semester").stat().st_mode & 0o005, "the folders above keep the umask's mode"
    assert not _student_opens(course.root / "nbgrader_config.py")
    existing = open_folder / "existing"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    with pytest.raises(CourseError, match=f"chmod o-rwx {existing}"):
        init_course(existing, "dlsys-test", open_folder / "exchange")
    existing.chmod(0o700)
    assert init_course(existing, "dlsys-test", open_folder / "exchange").root == existing
