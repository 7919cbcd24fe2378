"""PyLTI1p3's ServiceConnector (AGS, NRPS and their access tokens), with what this course needs
that the library (2.0.0) gets wrong or leaves out, each fixed here and nowhere else:

- **Tokens expire.** PyLTI1p3 caches an access token per scope set for the connector's whole life
  and ignores ``expires_in``; a long push would use a dead token. Here a token is cached until 30
  seconds before it expires, then requested again (client-credentials grant, a JWT assertion
  signed with the tool's key, only the scopes the command needs).
- **Paging keeps the URL's case.** PyLTI1p3 lower-cases the whole ``Link`` header before taking the
  ``rel="next"`` URL from it, so a case-sensitive page cursor (Canvas's) breaks; the next URL is
  read again here from the header as sent.
- **The assertion names its key.** PyLTI1p3's ``get_kid()`` is None for a PEM key, so the
  platform could not pick the key from the tool's JWKS; the kid here is the key's RFC 7638 thumbprint.
- **Every request has a timeout** (c.LMS.timeout); requests' default is to wait for ever. A read
  (GET) and the token request are tried once more after a 5xx or no answer; a score post is not
  (push.py decides, from the platform's results, whether it arrived).
- **Errors say what failed without the token**: LmsError with the URL, the HTTP status and the
  start of the platform's answer (PyLTI1p3's own exception quotes the whole body).

Nothing here logs, prints or stores a token.
"""
from __future__ import annotations

import re
import time
import uuid

from .registration import LmsError, Registration

AGS_SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly")
NRPS_SCOPES = ("https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",)
MARGIN = 30  # seconds before its expiry a cached token is requested again
NEXT = re.compile(r'<([^>]*)>\s*;\s*rel="?next"?', re.IGNORECASE)


class Unanswered(LmsError):
    """The platform could not be reached or did not answer in time: what the request did there is unknown."""


class Refused(LmsError):
    """The platform answered with an HTTP error."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def next_link(header: str) -> str | None:
    match = NEXT.search(header.replace("\n", " "))
    return match.group(1) if match else None


def connect(reg: Registration, private_key: str):
    """A connector for ``reg``, signing with ``private_key`` (PEM)."""
    import requests
    from pylti1p3.registration import Registration as LibRegistration
    from pylti1p3.service_connector import ServiceConnector

    from .keys import key_id, public_pem

    kid = key_id(private_key)
    lib = (LibRegistration().set_issuer(reg.issuer).set_client_id(reg.client_id)
           .set_auth_token_url(reg.token_url).set_auth_login_url(reg.auth_login_url or reg.token_url)
           .set_key_set_url(reg.jwks_url or None).set_tool_private_key(private_key)
           .set_tool_public_key(public_pem(private_key)))
    if reg.token_audience:
        lib.set_auth_audience(reg.token_audience)

    class Session(requests.Session):
        """requests with c.LMS.timeout on every request; counts them (push reports them)."""
        count = 0
        last_status: int | None = None

        def request(self, method, url, *args, **kwargs):
            # A read, or the token request, is safe to repeat: once more after a 5xx or no answer.
            # A score post never is here: push.py records it and checks it on the platform first.
            again = method.upper() == "GET" or url == reg.token_url
            for attempt in (1, 2):
                try:
                    response = self._once(method, url, *args, **kwargs)
                except Unanswered:
                    if again and attempt == 1:
                        continue
                    raise
                if again and attempt == 1 and response.status_code >= 500:
                    continue
                return response

        def _once(self, method, url, *args, **kwargs):
            kwargs.setdefault("timeout", reg.timeout)
            self.count += 1
            self.last_status = None
            try:
                response = super().request(method, url, *args, **kwargs)
                self.last_status = response.status_code
                return response
            except requests.Timeout:
                raise Unanswered(f"the platform did not answer within {reg.timeout:g} s ({url}); c.LMS.timeout "
                                 f"sets the wait") from None
            except requests.ConnectionError as err:
                raise Unanswered(f"cannot reach the platform at {url}: {type(err).__name__} (is the URL in "
                                 f"nbgrader_config.py right, and the platform up?)") from None

    class Connector(ServiceConnector):
        def __init__(self):
            session = Session()
            session.headers["User-Agent"] = "course-lms (PyLTI1p3)"
            super().__init__(lib, session)
            self._expires: dict[tuple[str, ...], float] = {}
            self.session, self.reg = session, reg

        def get_access_token(self, scopes) -> str:
            # Replaces PyLTI1p3's (cached for ever, expires_in ignored); the assertion is built as it builds it.
            key = tuple(sorted(scopes))
            if key in self._access_tokens and time.monotonic() < self._expires.get(key, 0):
                return self._access_tokens[key]
            now = int(time.time())
            claims = {"iss": reg.client_id, "sub": reg.client_id, "aud": reg.token_audience or reg.token_url,
                      "iat": now - 5, "exp": now + 60, "jti": f"course-lms-{uuid.uuid4()}"}
            # PyLTI1p3's get_kid() is None for a PEM key (jwcrypto sets no kid): the key's thumbprint, as in its JWK
            assertion = self.encode_jwt(claims, private_key, {"kid": kid})
            answer = self._requests_session.post(reg.token_url, data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion, "scope": " ".join(key)})
            if not answer.ok:
                raise Refused(f"the platform refused an access token ({reg.token_url}: HTTP {answer.status_code} "
                              f"{_start(answer.text)}); check c.LMS.client_id and that the platform has this tool's "
                              f"public key (course lms config)", answer.status_code)
            try:
                body = answer.json()
                token, lifetime = body["access_token"], float(body.get("expires_in", 3600))
                assert isinstance(token, str) and token
            except Exception:  # noqa: BLE001 - whatever the platform sent, it is not a token answer
                raise LmsError(f"the platform's token answer ({reg.token_url}) is not an OAuth2 token response")
            self._access_tokens[key] = token
            self._expires[key] = time.monotonic() + max(0.0, lifetime - MARGIN)
            return token

        def make_service_request(self, scopes, url, *args, **kwargs):
            from pylti1p3.exception import LtiServiceException

            try:
                answer = super().make_service_request(scopes, url, *args, **kwargs)
            except LtiServiceException as err:
                status = err.response.status_code
                raise Refused(f"{url}: HTTP {status} {_start(err.response.text)}", status) from None
            except ValueError:
                raise LmsError(f"{url}: the platform's answer is not JSON") from None
            link = next((v for k, v in answer["headers"].items() if k.lower() == "link"), "")
            answer["next_page_url"] = next_link(link)   # PyLTI1p3 lower-cased it
            return answer

    return Connector()


def _start(text: str, length: int = 200) -> str:
    text = " ".join((text or "").split())
    return text[:length] + ("..." if len(text) > length else "")
