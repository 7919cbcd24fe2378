"""The hub's LTI 1.3 login, configured from the course's registration (c.LMS in its
nbgrader_config.py), read once at the hub's start.

hub/jupyterhub_config.py calls ``configure`` when COURSE_HUB_LOGIN=lti; the course folder is the
one the grader service uses (COURSE_HUB_COURSE_DIR, default ~grader-<course id>/<course id>).
Its LMS roster says which learners get in, its exchange which assignments a link may land on,
and its owner's key (c.LMS.private_key_file) is the one whose public half the hub serves.
A registration that lacks what a launch needs (issuer, client id, deployment id, the platform's
authorization and JWKS URLs) stops the hub with the setting to write: a hub that started without
them would refuse every student at the door.
"""
from __future__ import annotations

from pathlib import Path

AUTHENTICATOR = "course_tools.hub.lti_login.CourseLTI13Authenticator"
NEEDS = ("deployment_id", "auth_login_url", "jwks_url")


def _key_file(course, chosen: Path) -> Path:
    """The key file as its owner's commands see it: c.LMS.private_key_file, else the default under the
    course folder owner's home (the hub runs as root, whose home is not the grader's)."""
    import pwd

    from ..lms.registration import settings

    written = settings(course).private_key_file
    home = Path(pwd.getpwuid(course.root.stat().st_uid).pw_dir)
    if written.startswith("~/"):
        return home / written[2:]
    if written:
        return chosen
    return home / ".config" / "course-lms" / f"{course.course_id or 'course'}.pem"


def configure(c, course_root: Path, graders_group: str, state: Path) -> None:
    """Set ``c`` (a JupyterHub configuration) to log in through LTI 1.3 launches of the course at
    ``course_root``; instructors and TAs join ``graders_group``; used nonces go to ``state``."""
    from ..course_dir import Course
    from ..lms.registration import registration

    course = Course(Path(course_root))
    reg = registration(course, needs=NEEDS)
    c.JupyterHub.authenticator_class = AUTHENTICATOR
    lti = c.CourseLTI13Authenticator
    lti.issuer = reg.issuer
    lti.client_id = {reg.client_id}
    lti.deployment_ids = {reg.deployment_id}
    lti.authorize_url = reg.auth_login_url
    lti.jwks_endpoint = reg.jwks_url
    lti.graders_group = graders_group
    lti.nonce_store = str(Path(state) / "lti-nonces.sqlite")
    lti.course_dir = str(Path(course_root))
    lti.tool_key_file = str(_key_file(course, reg.key_file))
    lti.exchange = str(course.exchange)
    lti.tool_key_owner = Path(course_root).stat().st_uid   # the grader account: the key is its own

