"""The hub's login from the LMS: JupyterHub's LTI 1.3 authenticator (jupyterhub-ltiauthenticator,
PyPI) with what this course needs on top, and nothing of the OIDC flow rewritten.

The library does the login initiation (state and nonce in encrypted cookies, the redirect to the
platform's authorization URL) and, on the launch, checks the id_token's signature against the
platform's JWKS (fetched at each launch, so a rotated key is found), ``iss``, ``aud``, ``azp``,
``exp``, the age of ``iat``, the state against its cookie, the nonce against its cookie, the LTI
version and the required claims. What the LTI 1.3 security framework also requires and the
library (1.6.3) does not check is added here, each marked "NOT IN THE LIBRARY":

- the deployment id is one this course registered (c.LMS.deployment_id);
- the nonce is used once (lti_nonces.py): the library's cookie check alone lets a captured form
  post be posted again with its cookies;
- the message type is a resource link launch: the library also logs in an LtiDeepLinkingRequest,
  a content-selection message this tool does not answer.

Who gets in, and a learner's Unix account (lti_accounts.py): a learner must be an active student of
the course's LMS roster (`course lms roster`), and gets their Unix account at the first launch; the
graders' JWKS (lti_jwks.py) is served at lti13/jwks; a launch for one assignment lands on it
(lti_landing.py).

The account name is the roster's (course_tools/lms/accounts.py): the platform's user id (``sub``,
which NRPS calls ``user_id``) as it is when it is a safe Unix name, else mapped; never the e-mail
(the library's default ``username_key``). Instructors and TAs by LTI role go into the graders'
group (JupyterHub's managed groups: a role taken away in the LMS is taken away at the next launch);
learners into none; anyone else is refused.

Logging: the library logs the whole launch request (the id_token) and the nonces at debug level
and the state and nonces in its warnings; its handlers here log through QuietLog, which keeps the
words of its warnings up to their first ': ' and nothing else. A refused launch is logged once, with its reason and
no token content, and answered with a page that says why.
"""
from __future__ import annotations

import asyncio
import logging

from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import IncorrectValueError, LoginError, ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from tornado.web import HTTPError
from traitlets import Bool, Int, Set, Unicode, default

from ..lms.accounts import account_name
from ..lms.roster import is_grader, is_learner
from . import lti_accounts, lti_landing
from .accounts import AccountError
from .lti_jwks import ROUTE as JWKS_ROUTE, ToolKeySetHandler
from .lti_nonces import UsedNonces

DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
MESSAGE_TYPE = "https://purl.imsglobal.org/spec/lti/claim/message_type"
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
RESOURCE_LINK_LAUNCH = "LtiResourceLinkRequest"
launch_log = logging.getLogger("course_tools.hub.lti_login")


class ReplayedLaunch(ValidationError):
    """A launch whose nonce was used before."""


class QuietLog(logging.LoggerAdapter):
    """The library handlers' log without token content: debug and info lines (the launch request,
    nonces) are dropped; a warning or error keeps its text up to its first ': ' and no arguments."""

    def log(self, level, msg, *args, **kwargs):
        if level >= logging.WARNING:
            self.logger.log(level, "ltiauthenticator: %s", str(msg).split(": ")[0])


def refusal_text(message: str) -> str:
    """The reason of a refusal without what follows its first ': ' (PyJWT quotes the token's kid there)."""
    return (message or "invalid launch").split(": ")[0].strip()


class CourseLoginHandler(LTI13LoginInitHandler):
    """The library's login initiation, logging quietly, its state and nonce cookies sent back on
    the LMS's cross-site form post."""

    @property
    def log(self):
        return QuietLog(super().log, {})

    def _set_oauth_cookie(self, key: str, value):
        """NOT IN THE LIBRARY: the launch is a form the LMS's page posts to the hub, a cross-site POST,
        and browsers send a cookie on one only when it is ``SameSite=None; Secure`` (so over https).
        Only these two short-lived, encrypted cookies: the hub's login cookie stays as JupyterHub sets it."""
        public = self.settings.get("public_url")
        if (public.scheme if public else self.request.protocol) != "https":
            return super()._set_oauth_cookie(key, value)   # plain http (loopback tests): no browser launch works
        self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True, samesite="None", secure=True)


class CourseLaunchHandler(LTI13CallbackHandler):
    """The library's launch (redirect URI) handler, with the checks it lacks and one logged
    refusal without token content."""

    @property
    def log(self):
        return QuietLog(super().log, {})

    _claims: dict | None = None

    def decode_and_validate_launch_request(self):
        id_token = super().decode_and_validate_launch_request()
        self.authenticator.check_launch(id_token)   # after the library's checks: a forged token never gets here
        self._claims = id_token
        return id_token

    async def redirect_to_next_url(self, user):
        """The assignment the link is for, the graders' home, or the library's next URL (lti_landing.py)."""
        auth, claims = self.authenticator, self._claims or {}
        grader = is_grader([r for r in claims.get(ROLES) or [] if isinstance(r, str)])
        _, exchange, course_id = lti_accounts.course_paths(auth.course_dir)
        target = lti_landing.landing(claims, grader, self.hub.base_url, exchange, course_id)
        if target is None:
            return await super().redirect_to_next_url(user)
        self.redirect(target)

    async def post(self):
        try:
            await super().post()
        except HTTPError as err:
            reason = refusal_text(err.log_message)
            launch_log.warning("LTI launch refused (HTTP %s): %s", err.status_code, reason)
            # JupyterHub's page for a 401 is its login page, which would not show why: a 400 does.
            raise HTTPError(400 if err.status_code == 401 else err.status_code, f"The launch from the LMS was refused: {reason}. Start again from "
                                             f"the course in the LMS; if this happens again, tell the course staff."
                            .replace("%", "%%")) from None


class CourseLTI13Authenticator(LTI13Authenticator):
    """LTI13Authenticator for one course registered with one LMS (set up by lti_settings.py)."""

    login_handler = CourseLoginHandler
    callback_handler = CourseLaunchHandler

    deployment_ids = Set(Unicode(), config=True, help="the deployment ids of this tool in the platform "
                                                      "(c.LMS.deployment_id); a launch of any other is refused")
    graders_group = Unicode("", config=True, help="the JupyterHub group of instructors and TAs "
                                                  "(formgrade-<course id>)")
    nonce_store = Unicode("", config=True, help="the SQLite file of used nonces (empty: in memory)")
    course_dir = Unicode("", config=True, help="the course folder: its LMS roster says which learners get in, "
                                               "its exchange which assignments a link may land on")
    unix_accounts = Bool(True, config=True, help="make an admitted learner's Unix account at their first launch "
                                                 "(LocalProcessSpawner needs one; off where the spawner needs none)")
    tool_key_file = Unicode("", config=True, help="the tool's private key (c.LMS.private_key_file), whose public "
                                                  "half the hub serves at lti13/jwks")
    tool_key_owner = Int(-1, config=True, help="the uid the key file must belong to (the grader account)")
    exchange = Unicode("", config=True, help="the course's exchange (the key file must not be inside it)")

    # A launch that passed every check is a member of the course in the LMS: that is the allow rule.
    allow_all = Bool(True, config=True)

    @default("manage_groups")
    def _manage_groups(self):
        return True

    @default("username_key")
    def _username_key(self):
        return "sub"

    _nonces: UsedNonces | None = None

    def get_handlers(self, app):
        """The library's handlers and the tool's public key set (lti_jwks.py)."""
        return [*super().get_handlers(app), (JWKS_ROUTE, ToolKeySetHandler)]

    def check_launch(self, id_token: dict) -> None:
        """NOT IN THE LIBRARY: the deployment, the message type and the nonce's first use."""
        if id_token.get(DEPLOYMENT) not in self.deployment_ids:
            raise IncorrectValueError("unknown deployment id (this hub serves the deployment registered in "
                                      "c.LMS.deployment_id)")
        if id_token.get(MESSAGE_TYPE) != RESOURCE_LINK_LAUNCH:
            raise IncorrectValueError(f"message type {str(id_token.get(MESSAGE_TYPE))[:40]!r} is not a resource "
                                      f"link launch (this tool offers no content selection)")
        if self._nonces is None:
            self._nonces = UsedNonces(self.nonce_store or None)
        if not self._nonces.first_use(str(id_token.get("nonce")), float(id_token.get("exp", 0))):
            raise ReplayedLaunch("this launch was used before (its nonce is spent)")

    def get_username(self, token: dict) -> str:
        """The roster's account name of the launch's user (accounts.account_name over iss and sub)."""
        sub = token.get("sub")
        if not isinstance(sub, str) or not sub:
            raise LoginError("the launch names no user (an anonymous launch: the LMS must send the user id)")
        return account_name(self.issuer, sub)[0]

    async def authenticate(self, handler, data=None):
        token = data or {}
        roles = [r for r in token.get(ROLES) or [] if isinstance(r, str)]
        grader = is_grader(roles)
        if not grader and not is_learner(roles):
            raise LoginError("the LMS gives this account no role the hub serves (learner, instructor or TA)")
        name = self.get_username(token)
        if not grader:
            await self._admit(token["sub"], name)
        # No auth_state: the hub keeps nothing of the token.
        return {"name": name, "groups": [self.graders_group] if grader else []}

    async def _admit(self, sub: str, name: str) -> None:
        """A learner on the course's LMS roster, with their Unix account (lti_accounts.py); else LoginError."""
        if not self.course_dir:
            raise LoginError("the hub has no course folder configured (COURSE_HUB_COURSE_DIR), so no roster")
        db_url = lti_accounts.course_paths(self.course_dir)[0]
        try:   # useradd and the database: not on the hub's event loop
            await asyncio.get_running_loop().run_in_executor(
                None, lti_accounts.admit_learner, db_url, sub, name, self.unix_accounts)
        except lti_accounts.NotAdmitted as err:
            raise LoginError(str(err)) from None
        except AccountError as err:
            launch_log.error("the Unix account of %s could not be made: %s", name, err)
            raise LoginError("your account could not be made on the hub (the hub's log says why); tell the "
                             "course staff") from None
