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


def test_the_page_says_the_students_own_deadline_in_utc_and_in_the_course_zone_across_a_clock_change():
    """deadline_note: the extension and the assignment's due date on either side of the EU's
    2027 clock change (28 March, 01:00 UTC: Berlin goes from UTC+1 to UTC+2), worked out by hand."""
    from course_tools.service.pages import deadline_note

    D = datetime.datetime
    due, extended, closes = D(2027, 3, 27, 12, 0), D(2027, 3, 29, 12, 0), D(2027, 4, 1, 12, 0)
    assert deadline_note(None, None, None, "Europe/Berlin", D(2027, 3, 1)) == ""
    on_time = deadline_note(due, None, closes, "Europe/Berlin", D(2027, 3, 27, 11, 59))
    assert on_time == "Your deadline: 2027-03-27 12:00 UTC (2027-03-27 13:00 Europe/Berlin, CET)."
    late = deadline_note(extended, due, closes, "Europe/Berlin", D(2027, 3, 29, 13, 30))
    assert late == ("Your deadline: 2027-03-29 12:00 UTC (2027-03-29 14:00 Europe/Berlin, CEST) (your extension; "
                    "the assignment's due date is 2027-03-27 12:00 UTC (2027-03-27 13:00 Europe/Berlin, CET)). "
                    "This submission came 1 hour 30 minutes after it, so it counts as late; late work is accepted "
                    "until 2027-04-01 12:00 UTC (2027-04-01 14:00 Europe/Berlin, CEST).")
    assert deadline_note(due, None, None, None, D(2027, 3, 29, 12, 0, 0)) == (
        "Your deadline: 2027-03-27 12:00 UTC. This submission came 2 days after it, so it counts as late.")
    assert deadline_note(due, None, None, "UTC", D(2027, 3, 27, 12, 0, 5)).endswith("came 5 seconds after it, so it "
                                                                                    "counts as late.")
    page = receipt_page("01_forward_ops", D(2027, 3, 29, 13, 30), "Feedback before the deadline is off.", late)
    assert "Your deadline: 2027-03-29 12:00 UTC" in page and "your extension; the assignment&#x27;s due date" in page
