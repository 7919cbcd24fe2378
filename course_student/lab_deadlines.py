"""GET <base>course/deadlines on the student's own Jupyter server: their own deadlines, for the
course's JupyterLab extension that labels each assignment in the Assignments tab
(hub/labextensions/course-deadlines).

A Jupyter server extension (course_tools/hub/deploy.py enables it in the students'
environment). The browser cannot ask the grading service itself (another address, and the page
holds no hub token); the student's server asks it with the server's own token (deadlines.ask),
in the student's account, and hands the answer to the student's own, logged-in browser. So the
answer is the same one `course fetch` prints, and it is the student's only.

The answer: the grading service's JSON (course_tools/service/deadline_api.py) with "known": true,
or {"known": false, "why": "..."} ("why" empty where there is no service to ask).
"""
from __future__ import annotations

import asyncio
import json

from . import deadlines

ROUTE = "course/deadlines"


def _answer() -> dict:
    own = deadlines.ask()
    if not own.known:
        return {"known": False, "why": own.why}

    def iso(moment):
        return None if moment is None else moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    return {"known": True, "zone": own.zone, "course_id": own.course_id, "assignments": {
        name: {"due": iso(d.due), "extended": d.extended, "assignment_due": iso(d.assignment_due),
               "late_until": iso(d.late_until)} for name, d in own.assignments.items()}}


def _jupyter_server_extension_points():
    return [{"module": "course_student.lab_deadlines"}]


def _load_jupyter_server_extension(server_app):
    from jupyter_server.base.handlers import APIHandler
    from jupyter_server.utils import url_path_join
    from tornado import web

    class OwnDeadlinesHandler(APIHandler):
        @web.authenticated
        async def get(self):
            # The service may take up to deadlines.ASK_SECONDS: not on the server's event loop.
            answer = await asyncio.get_running_loop().run_in_executor(None, _answer)
            self.set_header("Cache-Control", "no-store")
            self.finish(json.dumps(answer))

    web_app = server_app.web_app
    web_app.add_handlers(".*$", [(url_path_join(web_app.settings["base_url"], ROUTE), OwnDeadlinesHandler)])
