"""GET <base>course/open?assignment=ID on the student's own Jupyter server: where a launch from
the LMS lands (the hub sends a learner here after the login: course_tools/hub/lti_landing.py).

A Jupyter server extension of the student install (course_tools/student_package.py enables it).
The id is checked again here, never trusted: it must be one of the course's assignments
(course_lib.tasks, check_assignment), and only that known name is used in a path. Then:
  - not fetched yet: fetched into the server's root folder as `course fetch ID` does (nbgrader's
    fetch_assignment, in the student's own account), off the server's event loop;
  - then the browser goes to JupyterLab with the assignment's notebook open
    (lab/tree/ID/ID.ipynb).
Anything else (an unknown id, ``unknown=1`` from the hub, a fetch that fails because the
assignment is not released) answers a short page that says so, with the plain JupyterLab a click
(or 10 seconds) away. The page never repeats the text the link carried.
"""
from __future__ import annotations

import asyncio
import html
from pathlib import Path

ROUTE = "course/open"
NOT_RELEASED = ("The link you followed in the LMS does not name an assignment this course has released. Your "
                "JupyterLab opens in a moment; the Assignments tab lists what you can fetch. If the link should "
                "work, tell the course staff.")


def known_assignment(asked: str | None) -> str | None:
    """The course's own id equal to ``asked`` (a course_lib.tasks id), or None."""
    from course_lib import tasks

    return next((name for name in tasks.ASSIGNMENTS if name == asked), None)


def fetch_once(assignment: str, root: Path) -> str | None:
    """Fetch ``assignment`` into ``root`` unless it is there; None, or why it could not be fetched."""
    from .errors import CourseError
    from .nbgrader_run import run_nbgrader

    if (root / assignment).is_dir():
        return None
    try:
        run_nbgrader(["fetch_assignment", assignment], root, f"fetching {assignment}", timeout=300)
    except CourseError as err:
        return str(err)
    return None


def page(message: str, lab_url: str) -> str:
    lab = html.escape(lab_url, quote=True)
    return (f'<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="10;url={lab}">'
            f'<title>Course</title></head><body><p id="course-landing-message">{html.escape(message)}</p>'
            f'<p><a href="{lab}">Open JupyterLab</a></p></body></html>')


def _jupyter_server_extension_points():
    return [{"module": "course_student.lab_landing"}]


def _load_jupyter_server_extension(server_app):
    from jupyter_server.base.handlers import JupyterHandler
    from jupyter_server.utils import url_path_join, url_escape
    from tornado import web

    base = server_app.web_app.settings["base_url"]
    root = Path(server_app.root_dir)

    class LandingHandler(JupyterHandler):
        @web.authenticated
        async def get(self):
            lab = url_path_join(base, "lab")
            assignment = known_assignment(self.get_argument("assignment", None))
            why = NOT_RELEASED if assignment is None else await asyncio.get_running_loop().run_in_executor(
                None, fetch_once, assignment, root)
            if why is None and (root / assignment / f"{assignment}.ipynb").is_file():
                self.redirect(url_path_join(base, "lab", "tree", url_escape(assignment), url_escape(f"{assignment}.ipynb")))
                return
            if why is not None and assignment is not None:
                server_app.log.warning("course/open: %s", why)
                why = NOT_RELEASED
            self.set_header("Cache-Control", "no-store")
            self.finish(page(why or NOT_RELEASED, lab))

    server_app.web_app.add_handlers(".*$", [(url_path_join(base, ROUTE), LandingHandler)])
