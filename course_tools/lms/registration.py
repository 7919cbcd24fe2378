"""The platform's registration: ``c.LMS`` in the course's nbgrader_config.py.

An LMS administrator registers the course's hub as an LTI 1.3 tool; the platform then shows the
values that go here (issuer, client id, deployment id, its JWKS, token and authorization URLs),
and the course's own service URLs (the line items and memberships of the course), e.g.::

    c.LMS.issuer = "https://canvas.instructure.com"
    c.LMS.client_id = "10000000000042"
    c.LMS.deployment_id = "42:8865aa05b4b79b64a91a86042e43af5ea8ae79eb"
    c.LMS.auth_login_url = "https://sso.canvaslms.com/api/lti/authorize_redirect"
    c.LMS.token_url = "https://sso.canvaslms.com/login/oauth2/token"
    c.LMS.jwks_url = "https://sso.canvaslms.com/api/lti/security/jwks"
    c.LMS.lineitems_url = "https://canvas.example.edu/api/lti/courses/1234/line_items"
    c.LMS.memberships_url = "https://canvas.example.edu/api/lti/courses/1234/names_and_roles"

``registration(course)`` reads and checks them: a missing or malformed value is an LmsError that
names the setting and what to write.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from traitlets import Bool, Float, Unicode
from traitlets.config import Configurable

from ..course_dir import Course, CourseError

SECTION = "LMS"


class LmsError(CourseError):
    """The LMS cannot be used as asked; the message says what is wrong and what to do."""


class LMS(Configurable):
    """The LMS (an LTI 1.3 platform: Canvas, Moodle, ...) this course is registered with, and the
    tool's own key. `course lms config` prints what the LMS administrator enters on their side."""

    issuer = Unicode("", help="the platform's issuer (iss), e.g. https://canvas.instructure.com").tag(config=True)
    client_id = Unicode("", help="the client id the platform gave this tool").tag(config=True)
    deployment_id = Unicode("", help="the deployment id of this tool in the platform").tag(config=True)
    auth_login_url = Unicode("", help="the platform's OIDC authorization URL (launches)").tag(config=True)
    token_url = Unicode("", help="the platform's OAuth2 access token URL (client-credentials grant)").tag(config=True)
    token_audience = Unicode("", help="the aud of the token request's assertion, where the platform wants another "
                                      "value than token_url").tag(config=True)
    jwks_url = Unicode("", help="the platform's public key set (JWKS) URL").tag(config=True)
    lineitems_url = Unicode("", help="the course's AGS line items URL (the platform's lineitems endpoint of this "
                                     "course)").tag(config=True)
    memberships_url = Unicode("", help="the course's NRPS context memberships URL").tag(config=True)
    private_key_file = Unicode("", help="the tool's private key (PEM), made by `course lms keys`; default "
                                        "~/.config/course-lms/<course id>.pem, readable only by its owner"
                               ).tag(config=True)
    tool_url = Unicode("", help="the hub's public URL (https://hub.example.edu), for `course lms config`"
                       ).tag(config=True)
    timeout = Float(30.0, help="seconds one request to the platform may take").tag(config=True)
    post_progress = Bool(False, help="`course serve` posts each submission's progress to the LMS: Submitted and "
                                     "Pending when it arrives, PendingManual once graded while written answers "
                                     "wait; never a score and never after `course lms push` (read when the "
                                     "service starts)").tag(config=True)


@dataclass(frozen=True)
class Registration:
    issuer: str
    client_id: str
    deployment_id: str
    auth_login_url: str
    token_url: str
    token_audience: str
    jwks_url: str
    lineitems_url: str
    memberships_url: str
    key_file: Path
    tool_url: str
    timeout: float


def settings(course: Course) -> LMS:
    """c.LMS as the course's nbgrader_config.py sets it."""
    return LMS(config=course.config)


def default_key_file(course: Course) -> Path:
    return Path.home() / ".config" / "course-lms" / f"{course.course_id or 'course'}.pem"


def registration(course: Course, needs: tuple[str, ...] = ()) -> Registration:
    """The registration, checked: issuer, client id and token URL always, and the settings named
    in ``needs`` (e.g. "lineitems_url"); every URL https (http only on this machine's loopback)."""
    lms = settings(course)
    config = course.root / "nbgrader_config.py"
    required = ("issuer", "client_id", "token_url", *needs)
    missing = [name for name in required if not getattr(lms, name).strip()]
    if missing and not lms.issuer.strip() and not lms.client_id.strip():
        raise LmsError(f"no LMS registration configured in {config}: set c.LMS.issuer, c.LMS.client_id, "
                       f"c.LMS.token_url (and the rest that `course lms config` lists) to what the platform shows "
                       f"for this tool; see docs/lms.md")
    if missing:
        raise LmsError(f"{config}: set {', '.join('c.LMS.' + name for name in missing)} (the LMS shows "
                       f"{'it' if len(missing) == 1 else 'them'} for this tool; see docs/lms.md)")
    for name in ("issuer", "auth_login_url", "token_url", "token_audience", "jwks_url", "lineitems_url",
                 "memberships_url", "tool_url"):
        value = getattr(lms, name).strip()
        if value and not (name in ("issuer", "token_audience") and not value.startswith("http")):
            check_url(value, f"c.LMS.{name}")
    if lms.timeout <= 0:
        raise LmsError(f"{config}: c.LMS.timeout must be a number of seconds > 0, not {lms.timeout!r}")
    key = Path(lms.private_key_file).expanduser() if lms.private_key_file else default_key_file(course)
    return Registration(lms.issuer.strip(), lms.client_id.strip(), lms.deployment_id.strip(),
                        lms.auth_login_url.strip(), lms.token_url.strip(), lms.token_audience.strip(),
                        lms.jwks_url.strip(), lms.lineitems_url.strip(), lms.memberships_url.strip(),
                        key, lms.tool_url.strip().rstrip("/"), float(lms.timeout))


def check_url(url: str, what: str) -> None:
    """An https URL, or http to this machine's loopback (a test platform): tokens and grades never
    travel in clear text across a network."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LmsError(f"{what} {url!r} is not a URL (https://...)")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise LmsError(f"{what} {url!r} is plain http: write https (grades and tokens would cross the network "
                       f"unencrypted)")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_origin(url: str, base: str) -> bool:
    """Whether ``url`` is on the scheme, host and port of ``base`` (a line item id the platform
    answers must be on the platform, not anywhere it says)."""
    a, b = urlsplit(url), urlsplit(base)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port) and bool(a.path)
