"""The test LMS (tests/lms_platform.py) launching the tool: LTI 1.3's login initiation and the
signed launch, made by lti1p3platform's own OIDC login and message launch classes.

- ``login_initiation(user_id)``: the URL the LMS sends a user's browser to (the tool's login
  initiation URL with iss, login_hint, target_link_uri, lti_message_hint, client_id,
  lti_deployment_id), from lti1p3platform's OIDCLoginAbstract.prepare_preflight_url.
- ``/auth``: the platform's authorization endpoint. It checks the tool's authentication request
  (lti1p3platform's validate_preflight_response: nonce, state, redirect_uri, client_id) and that
  the redirect URI is one registered for the tool (as Canvas and Moodle do), signs the id_token
  for the user named by login_hint with lti1p3platform's MessageLaunch, and answers the page a
  real LMS answers: a form that posts id_token and state to the redirect URI.

``custom`` (a dict) is sent as the launch's custom parameters (an LMS link's "assignment=ID").
``/launch?user=ID`` is the LMS's page with the link a user clicks (the browser test's start).

``tamper`` makes the next launches wrong in one way, for the refusal tests: "aud" (another
tool's client id), "expired", "deployment" (an unknown deployment id), "message_type" (a submission
review), "deep_linking" (a content-selection request, which this tool does not offer), "foreign_key"
(signed with a key that is not the platform's, under the platform key's kid: a bad signature),
"unknown_kid" (signed with a key the JWKS does not hold, under its own kid).
"""
from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl

from lms_platform import Platform, _key_pair

RESOURCE_LINK = "assignment-04"


def _classes():
    from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
    from lti1p3platform.oidc_login import OIDCLoginAbstract
    from lti1p3platform.request import Request

    class QueryRequest(Request):
        def build_metadata(self, query: dict):
            return {"method": "GET", "form_data": {}, "get_data": query, "headers": {}, "content_type": None,
                    "path": "/auth", "json": None}

    class Login(OIDCLoginAbstract):
        def set_lti_message_hint(self, **kwargs):
            self._lti_message_hint = kwargs["hint"]

        def get_redirect(self, url: str) -> str:
            return url

    class Launch(LTIAdvantageMessageLaunchAbstract):
        def render_launch_form(self, launch_data, **kwargs) -> str:
            fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(launch_data[name])}">'
                             for name in ("id_token", "state"))
            return (f'<!doctype html><html><body onload="document.forms[0].submit()"><form method="post" '
                    f'action="{html.escape(launch_data["launch_url"])}">{fields}</form></body></html>')

    return QueryRequest, Login, Launch


class LaunchingPlatform(Platform):
    """The test LMS with its tool's launch URLs registered (what `course lms config` printed)."""

    def __init__(self, tool_jwk: dict, members: list[dict], login_url: str, redirect_uri: str, target: str):
        super().__init__(tool_jwk, members)
        self.registration.set_oidc_login_url(login_url).set_launch_url(target)
        self.redirect_uris = {redirect_uri}
        self.tamper: str | None = None
        self.custom: dict | None = None
        self.page_url = self.url   # where a browser opens /launch (a test may name the host otherwise)
        self.foreign_private, _ = _key_pair()

    def login_initiation(self, user_id: str) -> str:
        _, Login, _ = _classes()
        login = Login(None, self.conf)
        login.set_lti_message_hint(hint=RESOURCE_LINK)
        return login.initiate_login(user_id)

    def handle(self, method, path, query, headers, body):
        if path == "/auth":
            return self._authorize({k: v[0] for k, v in query.items()})
        if path == "/launch":   # the LMS's course page: the assignment's link, which starts the login initiation
            link = html.escape(self.login_initiation(query.get("user", [""])[0]), quote=True)
            return 200, {}, f'<!doctype html><html><body><a id="launch" href="{link}">04 conv backward</a></body></html>'

        return super().handle(method, path, query, headers, body)

    def _authorize(self, query: dict):
        from lti1p3platform.exceptions import PreflightRequestValidationException

        QueryRequest, _, Launch = _classes()
        member = next((m for m in self.members if m["user_id"] == query.get("login_hint")), None)
        if member is None:
            return 403, {}, {"error": "login_hint names no member"}
        if query.get("redirect_uri") not in self.redirect_uris:
            return 400, {}, {"error": "redirect_uri is not registered for this tool"}
        launch = Launch(QueryRequest(query), self.conf)
        launch.set_user_data(member["user_id"], member["roles"], member.get("name"), member.get("email"))
        launch.set_resource_link_claim(query.get("lti_message_hint") or RESOURCE_LINK, title="04 conv backward")
        launch.set_launch_context_claim("course-1", context_label="DLSYS", context_title="Deep learning systems")
        extra = {"aud": {"aud": "another-tool", "azp": "another-tool"},
                 "deployment": {"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "deployment-9"},
                 "message_type": {"https://purl.imsglobal.org/spec/lti/claim/message_type":
                                  "LtiSubmissionReviewRequest"},
                 # the claims jupyterhub-ltiauthenticator requires of a deep linking request, so that it passes there
                 "deep_linking": {"https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiDeepLinkingRequest",
                                  "https://purl.imsglobal.org/spec/lti/claim/tool_platform": {"guid": "lms-1",
                                                                                             "name": "Test LMS"},
                                  "https://purl.imsglobal.org/spec/lti/claim/launch_presentation": {
                                      "document_target": "window"},
                                  "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
                                      "deep_link_return_url": f"{self.url}/dl", "accept_types": ["ltiResourceLink"],
                                      "accept_presentation_document_targets": ["window"]}},
                 }.get(self.tamper or "")
        if self.custom is not None:
            launch.set_custom_parameters_claim(dict(self.custom))
        if extra:
            launch.set_extra_claims(extra)
        if self.tamper == "expired":
            launch.set_id_token_expiration(-120)
        genuine = self.registration.get_platform_private_key()
        if self.tamper in ("foreign_key", "unknown_kid"):
            from jwcrypto.jwk import JWK

            self.registration.set_platform_private_key(self.foreign_private)
            if self.tamper == "unknown_kid":
                self.registration.signing_kid = JWK.from_pem(self.foreign_private.encode()).thumbprint()
        try:
            return 200, {}, launch.lti_launch()
        except PreflightRequestValidationException:
            return 400, {}, {"error": "the authentication request is not valid"}
        finally:
            self.registration.set_platform_private_key(genuine)
            self.registration.signing_kid = None


def form_of(page: str) -> tuple[str, dict]:
    """(action, {name: value}) of the auto-posting form the platform answered."""
    action = html.unescape(re.search(r'<form method="post" action="([^"]*)"', page)[1])
    fields = {m[1]: html.unescape(m[2]) for m in re.finditer(r'<input type="hidden" name="(\w+)" value="([^"]*)"',
                                                             page)}
    return action, fields


def query_of(url: str) -> dict:
    return dict(parse_qsl(url.split("?", 1)[1])) if "?" in url else {}
