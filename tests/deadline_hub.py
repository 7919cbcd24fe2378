"""The grading service's deadlines page behind a real JupyterHub (issue 41): the hub of
tests/lti_hub.py (JupyterHub's own application, in this process) with the grading service
registered and the `user` role scoped as hub/jupyterhub_config.py does, and the students and
their tokens made by the hub itself (its database, as its REST API would).

``tokens`` (``DeadlineHub.tokens``) names each token by what it is:
  ada, ben        each student's own token with the default scopes (``inherit``: their roles'),
                  what the hub gives each student's server as JUPYTERHUB_API_TOKEN
  ada-unscoped    one of ada's tokens with only ``read:users:name!user=ada`` (no access to the service)
  service         the grading service's own token
  made-up         a token the hub never issued

Two steps, so that the students' servers can start (they need a token and the service's address)
while the course is still being made: ``real_hub`` starts the hub and makes the tokens, then
``DeadlineHub.serve`` starts the deadlines page for a course.
"""
from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass
from pathlib import Path

from course_tools.course_dir import Course
from tests.deadline_support import PREFIX, SCOPE, SERVICE, grading_url
from tests.lti_hub import InProcessHub, free_port

STUDENTS = ("ada", "ben")


def hub_config(service_port: int):
    """The parts of hub/jupyterhub_config.py the deadlines page depends on: the grading service by
    its name and URL, and the `user` role (every user's) with access to that service."""
    from traitlets.config import Config

    config = Config()
    config.JupyterHub.authenticator_class = "dummy"   # nobody logs in here: tokens are made below
    config.Authenticator.allowed_users = set(STUDENTS)   # the hub creates these users as it starts
    config.JupyterHub.load_roles = [{"name": "user", "scopes": ["self", SCOPE]}]
    config.JupyterHub.services = [{"name": SERVICE, "url": f"http://127.0.0.1:{service_port}"}]
    return config


def _make_tokens(hub: InProcessHub) -> dict[str, str]:
    async def make():
        from jupyterhub import orm

        db = hub.app.db
        made = {name: orm.User.find(db, name).new_api_token(note="deadline test") for name in STUDENTS}
        made["ada-unscoped"] = orm.User.find(db, "ada").new_api_token(note="no service access",
                                                                      scopes=["read:users:name!user=ada"])
        made["service"] = orm.Service.find(db, SERVICE).new_api_token(note="the grading service's own")
        db.commit()
        return made

    tokens = hub._run(make())
    tokens["made-up"] = secrets.token_hex(16)
    return tokens


@dataclass(frozen=True)
class DeadlineHub:
    hub_url: str                # the hub's own address (its REST API under /hub/api)
    service_port: int           # where the grading service listens once ``serve`` has started it
    tokens: dict[str, str]      # the hub's tokens by name (the module's docstring)

    @property
    def grading_url(self) -> str:
        """The address students are given (COURSE_GRADING_URL)."""
        return grading_url(self.service_port)

    def serve(self, course: Course) -> None:
        """Start ``course``'s deadlines page (deadline_api.serve_in_thread, as `course serve` starts it
        on a hub) with HubAuth for this hub, the service's own token and its scope. The service
        thread is a daemon: it ends with the tests."""
        from jupyterhub.services.auth import HubAuth

        from course_tools.service.deadline_api import serve_in_thread

        auth = HubAuth(api_url=f"{self.hub_url}/hub/api", api_token=self.tokens["service"], access_scopes={SCOPE},
                       cache_max_age=0)
        serve_in_thread(course, f"http://127.0.0.1:{self.service_port}", PREFIX, hub_auth=auth)


@contextlib.contextmanager
def real_hub(state: Path):
    """Start the hub (its database under ``state``) and make the tokens; yield a DeadlineHub."""
    service_port = free_port()
    state.mkdir(parents=True, exist_ok=True)
    with InProcessHub(hub_config(service_port), state, free_port()) as hub:
        yield DeadlineHub(hub.url, service_port, _make_tokens(hub))
