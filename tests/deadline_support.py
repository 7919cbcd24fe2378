"""A course with a student on an extension, its grading service's deadlines page, and a stand-in
for the hub's identity API (issue 41: students see their own deadline).

The stand-in answers GET /hub/api/user as JupyterHub does (the token's owner, their kind and
scopes; 403 for a token it does not know), so the service's real jupyterhub HubAuth asks it
exactly what it asks a hub. tests/test_deadline_api.py asks a real JupyterHub instead
(tests/deadline_hub.py); the Chromium test of the Assignments tab still uses this stand-in, and
tests/test_hub.py runs the whole on a deployed hub.
"""
from __future__ import annotations

import asyncio
import datetime
import json
import socket
import threading

import nbformat

from course_tools.cli import main as course
from course_tools.course_dir import Course, init_course

COURSE_ID = "ext"
SERVICE = f"{COURSE_ID}-grading"
PREFIX = f"/services/{SERVICE}/"
SCOPE = f"access:services!service={SERVICE}"
A, B = "01_forward_ops", "02_backward_ops"
D = datetime.datetime
DUE_A, DUE_B = D(2027, 3, 27, 12, 0), D(2027, 4, 10, 12, 0)
EXTENDED_A = D(2027, 3, 29, 12, 0)   # ada's: 2 days more, across the EU's clock change of 28 March
ZONE = "Europe/Berlin"
# Hub tokens: the two students' own, a service's, and one of ada's without the scope to reach the service.
TOKENS = {"tok-ada": {"name": "ada", "kind": "user", "scopes": [SCOPE]},
          "tok-ben": {"name": "ben", "kind": "user", "scopes": [SCOPE]},
          "tok-service": {"name": "ada", "kind": "service", "scopes": [SCOPE]},
          "tok-ada-unscoped": {"name": "ada", "kind": "user", "scopes": ["read:users:name!user=ada"]}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def course_with_extension(tmp_path) -> Course:
    """ada and ben; 01 and 02 released, due DUE_A and DUE_B; ada's 01 extended to EXTENDED_A (the
    real `course extend`); the course's zone is ZONE."""
    made = init_course(tmp_path / "course", COURSE_ID, tmp_path / "exchange",
                       students=[("ada", "Ada", "L"), ("ben", "Ben", "M")])
    with open(made.root / "nbgrader_config.py", "a") as config:
        config.write(f'c.Course.timezone = "{ZONE}"\n')
    with made.gradebook(must_exist=False) as gradebook:
        for name, due in ((A, DUE_A), (B, DUE_B)):
            gradebook.update_or_create_assignment(name, duedate=due)
    for name in (A, B):   # released: what the Assignments tab lists, and what the page answers for
        folder = made.exchange / COURSE_ID / "outbound" / name
        folder.mkdir(parents=True)
        nbformat.write(nbformat.v4.new_notebook(), folder / f"{name}.ipynb")
    assert course(["extend", A, "ada", "--until", "2027-03-29 12:00 UTC", "--reason", "illness",
                   "--course", str(made.root)]) == 0
    return Course(made.root)


def stand_in_hub():
    """The tornado application answering GET /hub/api/user from TOKENS."""
    from tornado import web

    class User(web.RequestHandler):
        def get(self):
            words = self.request.headers.get("Authorization", "").split()
            model = TOKENS.get(words[1]) if len(words) == 2 and words[0] == "token" else None
            if model is None:
                raise web.HTTPError(403)
            self.finish(json.dumps(model))

    return web.Application([(r"/hub/api/user", User)])


def serve_app(app, port: int) -> None:
    """Serve the tornado application ``app`` on 127.0.0.1:port from a daemon thread."""
    started = threading.Event()

    def run():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        app.listen(port, "127.0.0.1")
        started.set()
        loop.run_forever()

    threading.Thread(target=run, daemon=True).start()
    started.wait()


def start_service(course_: Course, service_port: int | None = None) -> str:
    """The stand-in hub and the grading service's deadlines page (deadline_api.serve_in_thread, as
    `course serve` starts it on a hub), on ``service_port`` (default: a free one); returns the
    address students are given (COURSE_GRADING_URL, as grading_url writes it)."""
    from jupyterhub.services.auth import HubAuth

    from course_tools.service.deadline_api import serve_in_thread

    hub_port, service_port = free_port(), service_port or free_port()
    serve_app(stand_in_hub(), hub_port)
    auth = HubAuth(api_url=f"http://127.0.0.1:{hub_port}/hub/api", api_token="the-service's-own",
                   access_scopes={SCOPE}, cache_max_age=0)
    serve_in_thread(course_, f"http://127.0.0.1:{service_port}", PREFIX, hub_auth=auth)
    return grading_url(service_port)


def grading_url(service_port: int) -> str:
    return f"http://127.0.0.1:{service_port}{PREFIX}"
