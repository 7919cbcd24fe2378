"""GET <prefix>deadlines: the logged-in student's own deadlines, as JSON, and nobody else's.

On a hub the grading service is a hub service with a URL (hub/jupyterhub_config.py); the hub
proxies /services/<course id>-grading/ to it. A student's `course fetch` / `course submit` and
their JupyterLab's Assignments tab (through their own server, course_student/lab_deadlines.py)
ask it with the student's own hub token. Who asks is what the hub says that token belongs to
(jupyterhub's HubAuth: GET <hub api>/user with the token), never what the request says: the page
takes no parameter and no path beyond its own name, and answers only for the token's user. A
token the hub does not know, a service's token, or one without the scope to reach this service is
refused. The gradebook and the extensions stay in the grader account; only one student's
deadlines leave it, to that student.

The answer, every time naive UTC written as ISO 8601 with a Z:

    {"student": "ada", "course_id": "dlsys", "zone": "Europe/Berlin" | null, "now": "...Z",
     "assignments": {"01_forward_ops": {"due": "...Z" | null, "extended": true,
                                        "assignment_due": "...Z" | null, "late_until": "...Z" | null}}}

``due`` is the student's own deadline (deadlines.deadline_of: the extension's where one is in
force), ``assignment_due`` the assignment's own due date, ``late_until`` the end of the student's
late window (null: no end), for each released assignment.
"""
from __future__ import annotations

import datetime
import json
import logging
import threading

from ..course_dir import Course
from ..deadlines import deadline_of
from ..exchange_folders import released_assignments
from ..extensions import course_zone

log = logging.getLogger("course.serve")
PAGE = "deadlines"


def _iso(moment: datetime.datetime | None) -> str | None:
    return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def own_deadlines(course: Course, student: str, now: datetime.datetime | None = None) -> dict:
    """The answer for ``student`` (the hub's name for the token's owner), as the module says."""
    zone = course_zone(course)
    answer = {}
    for assignment in released_assignments(course):
        mine = deadline_of(course, assignment, student)   # the due date from the gradebook, the extension in force
        answer[assignment] = {"due": _iso(mine.due), "extended": mine.extended,
                              "assignment_due": _iso(mine.original_due), "late_until": _iso(mine.late_window_end)}
    return {"student": student, "course_id": course.course_id, "zone": None if zone is None else str(zone),
            "now": _iso(now or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)),
            "assignments": answer}


def make_app(course: Course, prefix: str, hub_auth):
    """The tornado application that serves <prefix>deadlines for ``course``; ``hub_auth``: a
    jupyterhub HubAuth for the hub this service belongs to (its API URL, this service's token and
    the scope a caller needs, ``access_scopes``)."""
    import re

    from tornado import web

    class OwnDeadlines(web.RequestHandler):
        def check_xsrf_cookie(self):   # GET only; the hub token in a header is the credential, no cookie is read
            pass

        def _refuse(self, status: int, why: str) -> None:
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"error": why}))

        async def get(self):
            self.set_header("Cache-Control", "no-store")
            if self.request.query:
                # ?student=, ?user=, ?token=: the answer is the token owner's, whoever is named.
                return self._refuse(400, f"{PAGE} takes no parameters (got {sorted(self.request.query_arguments)}): "
                                         f"it answers for the hub user whose token comes in the Authorization header")
            match = hub_auth.auth_header_pat.match(self.request.headers.get(hub_auth.auth_header_name, ""))
            if not match:
                return self._refuse(401, "no hub token: send 'Authorization: token <your JUPYTERHUB_API_TOKEN>'")
            model = await hub_auth.user_for_token(match.group(1), sync=False)
            if not model:
                return self._refuse(403, "the hub does not know this token")
            if model.get("kind", "user") != "user":
                return self._refuse(403, f"a {model.get('kind')} has no deadlines: only a student's own token is answered")
            if hub_auth.access_scopes and not hub_auth.check_scopes(hub_auth.access_scopes, model):
                return self._refuse(403, f"this token lacks the scope {sorted(hub_auth.access_scopes)}")
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(own_deadlines(course, model["name"])))

    # The one path, exactly: /deadlines/<name>, /deadlines/../x and the like are 404 (tornado's
    # default), so no part of the path can choose whose deadlines come back.
    return web.Application([(re.escape(prefix.rstrip("/") + "/" + PAGE), OwnDeadlines)])


def serve_in_thread(course: Course, url: str, prefix: str, hub_auth=None) -> threading.Thread:
    """Serve make_app on ``url``'s host and port (JUPYTERHUB_SERVICE_URL) in a daemon thread of its
    own event loop; ``hub_auth`` defaults to HubAuth from the hub's environment variables."""
    import asyncio
    from urllib.parse import urlparse

    where = urlparse(url)
    if hub_auth is None:
        from jupyterhub.services.auth import HubAuth

        hub_auth = HubAuth()   # JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_NAME's scope
    started, failed = threading.Event(), []

    def run():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            make_app(course, prefix, hub_auth).listen(where.port, where.hostname or "127.0.0.1")
        except OSError as err:
            failed.append(err)
            started.set()
            return
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="deadline-api", daemon=True)
    thread.start()
    started.wait()
    if failed:
        raise failed[0]
    log.info("students' own deadlines at %s%s", url.rstrip("/") + prefix.rstrip("/") + "/", PAGE)
    return thread
