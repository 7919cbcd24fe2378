"""A course with a student on an extension, for the tests of the grading service's deadlines page
(issue 41: students see their own deadline): the course, its names and dates, and the address
students are given.

The hub that says who a token belongs to is a real JupyterHub in the test's process
(tests/deadline_hub.py); tests/test_deadline_api.py asks the page with its tokens, and
tests/test_deadline_tab.py reads the labels of the Assignments tab in Chromium through two real
JupyterLab servers (tests/student_server.py), each holding its student's hub token.
tests/test_hub.py deploys the service on a real hub with its URL and role, but sets no due date
and asserts no deadline label.
"""
from __future__ import annotations

import datetime
import socket

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


def grading_url(service_port: int) -> str:
    """The address students are given (COURSE_GRADING_URL, as hub/jupyterhub_config.py writes it) for
    a service on ``service_port``."""
    return f"http://127.0.0.1:{service_port}{PREFIX}"
