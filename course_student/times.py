"""Moments as the course writes them to students: UTC, the course's zone beside it, and how long
after a deadline something came. The grading service's pages and the student's `course fetch` /
`course submit` both use these, so a student reads one deadline the same way everywhere."""
from __future__ import annotations

import datetime

from .words import plural


def in_zone(moment: datetime.datetime, zone: str | None) -> str:
    """'2027-03-29 13:00 UTC', and the same moment in ``zone`` (c.Course.timezone) besides, with
    the zone's abbreviation so that a clock change shows. ``moment``: naive UTC."""
    text = f"{moment:%Y-%m-%d %H:%M} UTC"
    if zone and zone != "UTC":
        from zoneinfo import ZoneInfo

        local = moment.replace(tzinfo=datetime.timezone.utc).astimezone(ZoneInfo(zone))
        text += f" ({local:%Y-%m-%d %H:%M} {zone}, {local:%Z})"
    return text


def duration(delta: datetime.timedelta) -> str:
    """'2 days 3 hours', '1 hour 30 minutes', '5 minutes', '12 seconds' (at least 1 second)."""
    seconds = int(delta.total_seconds())
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    if seconds < 60:
        return plural(max(seconds, 1), "second")
    if days:
        return plural(days, "day") + (f" {plural(hours, 'hour')}" if hours else "")
    if hours:
        return plural(hours, "hour") + (f" {plural(minutes, 'minute')}" if minutes else "")
    return plural(minutes, "minute")
