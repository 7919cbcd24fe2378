"""An LTI 1.3 platform on loopback that plays the LMS in the tests of `course lms` (issue 42).

The platform's side of the security framework comes from lti1p3platform (PyPI): its
Registration holds the platform's keys and the tool's public key set, its platform class checks
the tool's signed client assertion and issues the access tokens (with the scopes asked for, among
those it supports), and checks them on each service request. What the library leaves to its user
is here: the HTTP server and the service endpoints (line items, scores, results, memberships,
JWKS, token), holding a course's members and every score it receives.

Workarounds of lti1p3platform 0.1.8, each marked "WORKAROUND" below:
- its token endpoint verifies the client assertion with ``verify_aud`` off and never compares its
  ``iss``/``sub`` with the client id: both are checked here;
- ``validate_token`` returns False (not an error) for a token without the scope, and accepts a
  token of another issuer's signature only through PyJWT: the False is turned into a 403 here.

Failure injection: ``fail_every = 3`` fails every third request, alternately with a 500 (the
request is not processed) and a timeout (the request *is* processed, and the answer comes after
``delay`` seconds, longer than the tool waits): what an overloaded LMS does. ``hold_post = k``
stops after storing the k-th score post and waits for ``release`` before answering (a test kills
the tool then). ``hold_request = "/token"`` stops at such a request before processing it, until
``release``. ``down = 500`` answers every request with that status, processing none (an LMS
that is failing); ``down = "timeout"`` answers none in time, processing none.

A score post without ``scoreGiven`` (progress only) clears the score held, as AGS says.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ISSUER = "https://lms.example.edu"
CLIENT_ID = "tool-42"
DEPLOYMENT_ID = "deployment-1"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"


def _key_pair() -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def _registration_class():
    """lti1p3platform's Registration, its keys named.

    WORKAROUND (lti1p3platform 0.1.8): its get_kid() reads the kid of a JWK made from the PEM
    key, which jwcrypto leaves without one, so the platform's JWKS names no key and its id_tokens
    carry no kid: a tool could not pick the key, and a token signed with a key outside the JWKS
    could not be told from one with a bad signature. Here the kid is the key's RFC 7638
    thumbprint, in the JWKS and in each id_token's header."""
    from jwcrypto.jwk import JWK
    from lti1p3platform.registration import Registration

    class Named(Registration):
        signing_kid: str | None = None   # a launch test's forged kid; None: the platform's key's

        def get_jwks(self) -> list[dict]:
            return [{**jwk, "kid": JWK.from_pem(self.get_platform_public_key().encode()).thumbprint()}
                    for jwk in super().get_jwks()]

        def get_kid(self) -> str:
            return self.signing_kid or JWK.from_pem(self.get_platform_public_key().encode()).thumbprint()

    return Named


class Platform:
    def __init__(self, tool_jwk: dict, members: list[dict], page_size: int = 10):
        from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract

        private, public = _key_pair()
        registration = (_registration_class()().set_iss(ISSUER).set_client_id(CLIENT_ID).set_deployment_id(DEPLOYMENT_ID)
                        .set_platform_private_key(private).set_platform_public_key(public)
                        .set_tool_key_set({"keys": [tool_jwk]}))

        class Conf(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs):
                pass

            def get_registration_by_params(self, **kwargs):
                return registration

        self.registration = registration
        self.conf = Conf()
        self.conf.get_registration()
        self.members = list(members)
        self.page_size = page_size
        self.lineitems: dict[int, dict] = {}
        self.made: list[int] = []
        self.results: dict[tuple[int, str], dict] = {}
        self.posts: list[dict] = []          # every score post stored: {"lineitem", "userId", ...payload}
        self.requests: list[tuple[str, str]] = []
        self.token_scopes: list[list[str]] = []
        self.fail_every, self.delay, self.failures = 0, 1.0, 0
        self.down: int | str | None = None
        self.hold_post: int | None = None
        self.hold_request: str | None = None
        self.withheld_scopes: set[str] = set()   # scopes this LMS never grants (as an institution may restrict)
        self.held, self.release = threading.Event(), threading.Event()
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # ------------------------------------------------------------------ running
    def __enter__(self) -> "Platform":
        if self.thread.ident is None:   # started once, entered again by a test's `with`
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def settings(self) -> str:
        """The c.LMS lines of a course registered with this platform."""
        return "\n".join([
            f'c.LMS.issuer = "{ISSUER}"', f'c.LMS.client_id = "{CLIENT_ID}"',
            f'c.LMS.deployment_id = "{DEPLOYMENT_ID}"', f'c.LMS.auth_login_url = "{self.url}/auth"',
            f'c.LMS.token_url = "{self.url}/token"', f'c.LMS.jwks_url = "{self.url}/jwks"',
            f'c.LMS.lineitems_url = "{self.url}/lineitems"', f'c.LMS.memberships_url = "{self.url}/memberships"',
        ]) + "\n"

    def score_posts(self) -> int:
        return sum(1 for method, path in self.requests if method == "POST" and path.endswith("/scores"))

    def held_scores(self) -> dict[str, tuple[float, float]]:
        """{user id: (score given, maximum)} as the platform holds them (scaled back to the post's maximum)."""
        return {user: (r["scoreGiven"], r["scoreMaximum"]) for (_, user), r in self.results.items()
                if r.get("resultScore") is not None}

    def progress_posts(self) -> list[dict]:
        """The stored posts that carried no score (progress only)."""
        return [p for p in self.posts if "scoreGiven" not in p]

    # ------------------------------------------------------------------ requests
    def handle(self, method: str, path: str, query: dict, headers, body: bytes):
        """(status, headers, body) of one request."""
        if path == "/jwks":
            return 200, {}, self.conf.get_jwks()
        if path == "/token" and method == "POST":
            return self._token(body)
        scopes = {"/memberships": ["https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]}
        needed = scopes.get(path) or (["https://purl.imsglobal.org/spec/lti-ags/scope/score"] if path.endswith("/scores")
                                      else ["https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"]
                                      if path.endswith("/results") else
                                      ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"])
        refused = self._authorized(headers.get("Authorization", ""), needed)
        if refused:
            return refused
        if path == "/memberships":
            return self._page(path, query, self.members, container=lambda items: {
                "id": f"{self.url}/memberships", "context": {"id": "course-1", "title": "DL systems"},
                "members": items})
        if path == "/lineitems":
            if method == "POST":
                return self._create_lineitem(json.loads(body))
            return self._page(path, query, list(self.lineitems.values()))
        parts = path.strip("/").split("/")
        if parts[0] != "lineitems" or len(parts) < 2 or not parts[1].isdigit() or int(parts[1]) not in self.lineitems:
            return 404, {}, {"error": "no such line item"}
        number = int(parts[1])
        if len(parts) == 2:
            return 200, {}, self.lineitems[number]
        if parts[2] == "scores" and method == "POST":
            if headers.get("Content-Type") != SCORE_TYPE:
                return 415, {}, {"error": f"scores are {SCORE_TYPE}"}
            return self._score(number, json.loads(body))
        if parts[2] == "results":
            item = self.lineitems[number]
            results = [{"id": f"{item['id']}/results/{user}", "scoreOf": item["id"], "userId": user,
                        "resultScore": r["resultScore"], "resultMaximum": item["scoreMaximum"],
                        "comment": r.get("comment")} for (n, user), r in sorted(self.results.items())
                       if n == number and r.get("resultScore") is not None]
            return self._page(path, query, results)
        return 404, {}, {"error": "no such endpoint"}

    def _token(self, body: bytes):
        import jwt
        from lti1p3platform.exceptions import LtiException

        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        asked = form.get("scope", "").split()
        form["scope"] = " ".join(s for s in asked if s not in self.withheld_scopes)
        try:
            answer = self.conf.get_access_token(form)
            # WORKAROUND: lti1p3platform decodes the assertion with verify_aud off and never checks iss/sub
            claims = jwt.decode(form["client_assertion"], options={"verify_signature": False})
            if claims.get("aud") not in (f"{self.url}/token", [f"{self.url}/token"]):
                raise LtiException(f"the assertion's aud {claims.get('aud')!r} is not this token endpoint")
            if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID:
                raise LtiException("the assertion's iss/sub is not the client id")
        except Exception as err:  # noqa: BLE001 - every refusal is the client's error
            return 400, {}, {"error": "invalid_client", "error_description": f"{type(err).__name__}: {err}"}
        self.token_scopes.append(sorted(asked))
        return 200, {}, answer

    def _authorized(self, header: str, scopes: list[str]):
        if not header.startswith("Bearer "):
            return 401, {}, {"error": "no bearer token"}
        try:
            allowed = self.conf.validate_token(header[len("Bearer "):], allowed_scopes=scopes)
        except Exception as err:  # noqa: BLE001
            return 401, {}, {"error": f"bad token: {type(err).__name__}"}
        if not allowed:   # WORKAROUND: validate_token answers False for a token without the scope
            return 403, {}, {"error": f"the token lacks {scopes}"}
        return None

    def _page(self, path: str, query: dict, items: list, container=None):
        """One page of ``items``; the next page's link carries a case-sensitive cursor (as Canvas's do)."""
        cursor = query.get("cursor", ["Pg0"])[0]
        if not cursor.startswith("Pg") or not cursor[2:].isdigit():
            return 400, {}, {"error": f"bad cursor {cursor!r}"}
        start = int(cursor[2:])
        page = items[start:start + self.page_size]
        headers = {}
        if start + self.page_size < len(items):
            headers["Link"] = f'<{self.url}{path}?cursor=Pg{start + self.page_size}>; rel="next"'
        return 200, headers, container(page) if container else page

    def _create_lineitem(self, item: dict):
        if not isinstance(item.get("scoreMaximum"), (int, float)) or item["scoreMaximum"] <= 0 or not item.get("label"):
            return 400, {}, {"error": "a line item needs a label and a scoreMaximum > 0"}
        number = max(self.made, default=0) + 1   # never an id again, even after a deletion
        self.made.append(number)
        self.lineitems[number] = {**item, "id": f"{self.url}/lineitems/{number}"}
        return 201, {}, self.lineitems[number]

    def _score(self, number: int, score: dict):
        user = score.get("userId")
        if user not in {m["user_id"] for m in self.members}:
            return 400, {}, {"error": f"{user!r} is not a member"}
        item = self.lineitems[number]
        previous = self.results.get((number, user))
        if previous and previous["timestamp"] >= score["timestamp"]:
            return 409, {}, {"error": "a score with a later timestamp is held"}
        if "scoreGiven" in score:
            scaled = score["scoreGiven"] * item["scoreMaximum"] / score["scoreMaximum"]
        else:   # progress only: AGS says the score held is cleared
            scaled = None
        self.results[(number, user)] = {**score, "resultScore": scaled}
        self.posts.append({"lineitem": number, **score})
        if self.hold_post is not None and len(self.posts) == self.hold_post:
            self.held.set()
            self.release.wait(30)
        return 200, {}, None


def _handler(platform: Platform):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):   # quiet: the test reads platform.requests
            pass

        def _serve(self, method: str):
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with platform._lock:
                platform.requests.append((method, parts.path))
                count = len(platform.requests)
                failing = platform.fail_every and count % platform.fail_every == 0
                if failing:
                    platform.failures += 1
                kind = "500" if failing and platform.failures % 2 == 1 else "timeout" if failing else ""
            if platform.hold_request and parts.path.endswith(platform.hold_request):
                platform.held.set()
                platform.release.wait(30)
            if platform.down == "timeout":
                time.sleep(platform.delay)
                return self._answer(503, {}, {"error": "down"})
            if platform.down:
                return self._answer(platform.down, {}, {"error": "down"})
            if kind == "500":
                return self._answer(500, {}, {"error": "injected failure"})
            status, headers, payload = platform.handle(method, parts.path, parse_qs(parts.query), self.headers, body)
            if kind == "timeout":
                time.sleep(platform.delay)   # processed, answered too late
            self._answer(status, headers, payload)

        def _answer(self, status: int, headers: dict, payload) -> None:
            html = isinstance(payload, str)   # a page (the launch's auto-posting form), else JSON
            data = b"" if payload is None else payload.encode() if html else json.dumps(payload).encode()
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "text/html; charset=utf-8" if html else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass   # the tool gave up waiting, or was killed

        def do_GET(self):
            self._serve("GET")

        def do_POST(self):
            self._serve("POST")

    return Handler
