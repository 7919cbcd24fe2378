"""An assignment released before release versions were kept: its next `course release` records
what the exchange hands out as v1 first, so that the students who fetched it still match a version.

The earlier release is this repository's own history (test_release_versions.EARLIER: 01 before its
setup helper ``_axes_tuple`` was renamed), put into the exchange as an older bundle would have.
"""
from __future__ import annotations

import shutil

from course_tools import release_versions
from course_tools.cli import main as course
from course_tools.course_dir import init_course
from test_release_versions import earlier, solved  # noqa: F401 - `earlier` is a fixture

ASSIGNMENT = "01_forward_ops"


def test_a_release_from_before_versions_becomes_v1_before_it_is_replaced(tmp_path, earlier, capsys):  # noqa: F811
    folder, exchange = tmp_path / "course", tmp_path / "exchange"
    init_course(folder, "old", exchange)  # `course init` without building the student install (a wheel)
    outbound = exchange / "old" / "outbound" / ASSIGNMENT
    shutil.copytree(earlier / "assignments" / ASSIGNMENT, outbound)  # released by a bundle without versions
    capsys.readouterr()

    assert course(["release", ASSIGNMENT, "--course", str(folder)]) == 2  # today's 01 differs: asks first
    out = capsys.readouterr().out
    assert f"recorded the release in {outbound} as v1" in out
    assert "_axes_tuple" in out and "makes a new version, v2" in out
    assert [v.label for v in release_versions.versions(folder, ASSIGNMENT)] == ["v1"]
    assert "_axes_tuple" in (release_versions.versions(folder, ASSIGNMENT)[0].course_lib / "ops" / "shaping.py").read_text()

    # a student of that release, whose notebook carries no label, is of v1
    unlabelled = solved(earlier, ASSIGNMENT, label=None)
    assert release_versions.match(release_versions.versions(folder, ASSIGNMENT), f"{ASSIGNMENT}.ipynb",
                                  unlabelled).label == "v1"
