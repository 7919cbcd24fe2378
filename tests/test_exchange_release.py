"""formgrader's Release button is `course release` (course_tools/exchange_release.py).

nbgrader's own release copies the assignment into the exchange and nothing else: no check that
the release reveals the solution of an assignment that still accepts late work, no version
record, no version label (issue 39: formgrader offered it beside the course's own release). The
button runs through nbgrader's API exactly as formgrader calls it (NbGraderAPI.release_assignment
with the course's configuration).
"""
from __future__ import annotations

import nbformat

from course_tools import release_versions
from course_tools.course_dir import init_course


def test_formgraders_release_makes_course_releases_checks_record_and_labels(tmp_path):
    course = init_course(tmp_path / "course", "rel", exchange=tmp_path / "exchange")
    outbound = course.exchange / course.course_id / "outbound"
    api = course.api()

    done = api.release_assignment("01_forward_ops")
    assert done["success"], done
    [version] = release_versions.versions(course.root, "01_forward_ops")
    released = nbformat.read(str(outbound / "01_forward_ops" / "01_forward_ops.ipynb"), as_version=4)
    assert release_versions.claimed_label(released) == version.label == "v1"

    # 01 has no due date, so its students may still submit: 02 (which holds 01's solution) is
    # refused, saying why and how to force it, and nothing reaches the exchange.
    refused = api.release_assignment("02_backward_ops")
    assert not refused["success"]
    assert "would reveal the solution of an assignment that still accepts late work" in refused["error"]
    assert "course release 02_backward_ops --force" in refused["error"]
    assert not (outbound / "02_backward_ops").exists()
    assert release_versions.versions(course.root, "02_backward_ops") == []
