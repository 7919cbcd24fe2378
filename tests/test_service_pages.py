"""The service's feedback pages as a student reads them: headings that tell submissions apart."""
from __future__ import annotations

import datetime

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
