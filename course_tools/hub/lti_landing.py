"""Where a launch lands: the assignment the LMS link is for, or the hub's default.

An LMS link to one assignment names it in the launch, in one of two ways an LMS lets an
instructor set per link (`course lms config` prints both):
  - the custom parameter ``assignment=<id>`` (Moodle: the activity's "Custom parameters"), or
  - the target link URI's query ``?assignment=<id>`` (Canvas: an External Tool assignment's URL).
Both are read from the signed id_token (never from the unsigned login initiation), and the custom
parameter wins. The value is never trusted: it is looked up among the course's *released*
assignments (the folders of the exchange's ``<course id>/outbound``), and only the name found
there goes on; a link may carry any text.

The landing URLs (under the hub's prefix), each through <hub>/hub/spawn?next=...: the hub starts
the learner's server (JupyterHub does not start one for a /user/ URL by itself) and then goes on:
  learner, released id   <hub>/hub/user-redirect/course/open?assignment=<id>: the student's own
                         server fetches it (as `course fetch` does) and opens its notebook
                         (course_student/lab_landing.py, which checks the id again)
  learner, other text    <hub>/hub/user-redirect/course/open?unknown=1: their JupyterLab, with a
                         page that says the link names no released assignment (not the text itself)
  learner, no assignment None: the library's own next URL (the hub, then the user's JupyterLab)
  instructor or TA       <hub>/hub/home: they have no student server; the hub's Services menu
                         reaches the course (formgrader)
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
TARGET = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
PARAMETER = "assignment"
OPEN = "user-redirect/course/open"
FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")   # what an outbound folder's name may be


def asked_assignment(claims: dict) -> str | None:
    """The text the launch gives as its assignment (custom parameter, else the target link URI's
    query), or None where it gives none. Only the first 200 characters are looked at."""
    custom = claims.get(CUSTOM)
    if isinstance(custom, dict) and isinstance(custom.get(PARAMETER), str) and custom[PARAMETER].strip():
        return custom[PARAMETER].strip()[:200]
    target = claims.get(TARGET)
    if isinstance(target, str):
        found = parse_qs(urlsplit(target[:2000]).query).get(PARAMETER)
        if found and found[0].strip():
            return found[0].strip()[:200]
    return None


def released(exchange: Path, course_id: str) -> list[str]:
    """The assignments released in the exchange (its outbound folders), by their folder names."""
    outbound = Path(exchange) / course_id / "outbound"
    try:
        return sorted(entry.name for entry in outbound.iterdir()
                      if FOLDER.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink())
    except OSError:
        return []


def landing(claims: dict, grader: bool, hub_prefix: str, exchange: Path, course_id: str) -> str | None:
    """The URL path a launch with ``claims`` goes to (``hub_prefix``: the hub's, e.g. "/hub/"), or
    None for the library's default."""
    if grader:
        return f"{hub_prefix}home"
    asked = asked_assignment(claims)
    if asked is None:
        return None
    known = {name: name for name in released(exchange, course_id)}
    then = f"{OPEN}?{urlencode({PARAMETER: known[asked]})}" if asked in known else f"{OPEN}?unknown=1"
    return f"{hub_prefix}spawn?{urlencode({'next': hub_prefix + then})}"
