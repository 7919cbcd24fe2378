"""The service's feedback pages as a student reads them: headings that tell submissions apart."""
from __future__ import annotations

import datetime
from pathlib import Path

from course_tools.service.pages import error_page, pending_page, receipt_page

UTC = datetime.timezone.utc


def test_two_submissions_in_the_same_minute_get_different_headings_and_the_tabs_exact_time():
    first = datetime.datetime(2026, 12, 3, 16, 56, 12, 345678, tzinfo=UTC)
    second = datetime.datetime(2026, 12, 3, 16, 56, 41, 5, tzinfo=UTC)
    pages = [make("01_forward_ops", when) for when in (first, second)
             for make in (error_page, lambda a, w: pending_page(a, w, 2, 30), lambda a, w: receipt_page(a, w, "x"))]
    headings = [page.split("<h1>")[1].split("</h1>")[0] for page in pages]
    assert "16:56:12 UTC" in headings[0] and "16:56:41 UTC" in headings[3]
    assert len(set(headings)) == 2
    assert "2026-12-03 16:56:12.345678 UTC" in pages[0] and "16:56:41.000005 UTC" in pages[3]


def test_the_queue_page_reloads_itself_and_names_its_course_for_the_lab_extension_and_no_final_page_does():
    """Feedback in one round (issue 39): the queue's page reloads itself and carries the marker the
    course's JupyterLab extension looks for (hub/labextensions/course-feedback-link), with the
    course and the assignment to fetch again; the pages that end a grading carry neither."""
    import re

    from course_tools.service.pages import PENDING_MARK, graded_page

    when = datetime.datetime(2026, 12, 3, 16, 56, 12, tzinfo=UTC)
    queued = pending_page("01_forward_ops", when, 0, 20, "dlsys")
    extension = (Path(__file__).resolve().parents[1] / "hub" / "labextensions" / "course-feedback-link" / "static"
                 / "remoteEntry.js").read_text()
    pattern = re.search(r"var PENDING = /(.*)/;", extension).group(1).replace("\\/", "/")
    found = re.search(pattern, queued)
    assert found and found.groups() == ("dlsys", "01_forward_ops") and PENDING_MARK in pattern
    assert '<meta http-equiv="refresh" content="5">' in queued and "turns into your feedback by itself" in queued
    assert "refresh" not in pending_page("01_forward_ops", when, 0, 20) and PENDING_MARK not in pending_page(
        "01_forward_ops", when, 0, 20)   # a course without an id: nothing to fetch again with
    for final in (error_page("01_forward_ops", when), receipt_page("01_forward_ops", when, "x"),
                  graded_page("01_forward_ops", when, {"tasks": {}}, False)):
        assert "refresh" not in final and not re.search(pattern, final)
