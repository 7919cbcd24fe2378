"""The hub's login from the LMS (course_tools/hub/lti_login.py, lti_settings.py): real LTI 1.3
launches made by the test LMS (lti1p3platform, tests/lms_launch.py) through JupyterHub's LTI 1.3
authenticator in a real JupyterHub (tests/lti_hub.py), at the URLs `course lms config` prints.

A valid launch logs in the roster's account name with the right groups, again the same user at
the next launch; each forged, replayed, expired, misaddressed or unknown launch is refused with
its reason on the page, creates no user and sets no login cookie; nothing of a token is logged.
"""
from __future__ import annotations

import contextlib
import html
import io
import logging
import re

import pytest
from lms_class import UUID, members, tool_key
from lms_launch import LaunchingPlatform, form_of
from lti_hub import InProcessHub, free_port

pytest.importorskip("ltiauthenticator")
pytest.importorskip("lti1p3platform")
requests = pytest.importorskip("requests")

GRADERS = "formgrade-lmstest"
LOGIN_COOKIE = "jupyterhub-hub-login"
MENTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
RELEASED = "01_forward_ops"


def printed_urls(course) -> dict[str, str]:
    """The login initiation URL, redirect URI and target link URI `course lms config` prints."""
    from course_tools.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["lms", "config", "--course", str(course.root)]) == 0
    out = out.getvalue()
    found = {}
    for key, label in (("login", "login initiation URL"), ("redirect", "redirect URI"), ("target", "target link URI")):
        found[key] = re.search(rf"{label}[^\n]*?(http\S+)", out)[1]
    return found


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """(hub, platform) for the module: a course registered with the test LMS, its hub logging in
    through LTI 1.3 as hub/jupyterhub_config.py configures it (lti_settings.configure)."""
    from traitlets.config import Config

    from course_tools.course_dir import Course, init_course
    from course_tools.hub import lti_settings
    from course_tools.lms.roster import sync

    tmp = tmp_path_factory.mktemp("launch")
    port = free_port()
    key, jwk = tool_key(tmp)
    course = init_course(tmp / "course", "lmstest", exchange=tmp / "exchange")
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + f'c.LMS.tool_url = "http://127.0.0.1:{port}"\n'
                      f'c.LMS.private_key_file = r"{key}"\n')
    urls = printed_urls(Course(course.root))
    platform = LaunchingPlatform(jwk, members(), urls["login"], urls["redirect"], urls["target"])
    config.write_text(config.read_text() + platform.settings())
    (tmp / "exchange" / "lmstest" / "outbound" / RELEASED).mkdir(parents=True)   # as `course release` leaves it
    hub_config = Config()
    (tmp / "state").mkdir()
    lti_settings.configure(hub_config, course.root, GRADERS, tmp / "state")
    # No Unix accounts here (tests/test_lms_browser.py makes real ones): the roster decides who gets in.
    hub_config.CourseLTI13Authenticator.unix_accounts = False
    with platform, InProcessHub(hub_config, tmp / "state", port) as running:
        running.course = Course(course.root)
        sync(running.course)   # `course lms roster`: the learners become students; "gone" is inactive
        yield running, platform, urls


def launch(platform, user_id: str, cookies_before_post: list | None = None) -> requests.Response:
    """A user's launch from the LMS, as a browser makes it: the login initiation, the redirect to
    the LMS's authorization endpoint, the LMS's form posted to the redirect URI."""
    browser = requests.Session()
    start = browser.get(platform.login_initiation(user_id), allow_redirects=False, timeout=30)
    assert start.status_code == 302, start.text[:500]
    page = browser.get(start.headers["Location"], allow_redirects=False, timeout=30)
    assert page.status_code == 200, page.text[:500]
    action, fields = form_of(page.text)
    if cookies_before_post is not None:
        cookies_before_post.append((action, fields, browser.cookies.copy()))
    return browser.post(action, data=fields, allow_redirects=False, timeout=30)


def test_a_learner_is_logged_in_as_the_rosters_account_and_again_at_the_next_launch(hub):
    running, platform, urls = hub
    from course_tools.lms.accounts import account_name

    answer = launch(platform, "zoe")
    assert answer.status_code == 302 and answer.headers["Location"] == "/hub/spawn", answer.text[:300]
    assert LOGIN_COOKIE in answer.cookies
    assert running.users()["zoe"] == []
    mapped = account_name("https://lms.example.edu", UUID)[0]
    assert launch(platform, UUID).status_code == 302 and mapped.startswith("lti-")
    assert launch(platform, UUID).status_code == 302
    users = running.users()
    assert mapped in users and UUID not in users and UUID.lower() not in users


def students(course) -> list[str]:
    with course.gradebook(must_exist=False) as gradebook:
        return sorted(s.id for s in gradebook.students)


def test_an_instructor_and_a_ta_are_graders_and_get_no_student_account(hub):
    running, platform, urls = hub
    before = students(running.course)
    for user in ("prof", "ta-lee"):
        answer = launch(platform, user)
        assert answer.status_code == 302 and answer.headers["Location"] == "/hub/home"   # no student server
    users = running.users()
    assert users["prof"] == [GRADERS] and users["ta-lee"] == [GRADERS]
    assert students(running.course) == before and "prof" not in before and "ta-lee" not in before


REFUSALS = {
    "foreign_key": "Signature verification failed",
    "unknown_kid": "Unable to find a signing key that matches",
    "aud": "Audience doesn't match",
    "expired": "Signature has expired",
    "deployment": "unknown deployment id",
    "message_type": "Incorrect value LtiSubmissionReviewRequest for message_type claim",
    "deep_linking": "is not a resource link launch",
}


@pytest.mark.parametrize("tamper", sorted(REFUSALS))
def test_a_forged_or_misaddressed_launch_is_refused_with_its_reason_and_creates_no_user(hub, tamper, caplog):
    running, platform, urls = hub
    before = running.users()
    platform.tamper = tamper
    try:
        with caplog.at_level(logging.DEBUG):
            answer = launch(platform, "s05")
    finally:
        platform.tamper = None
    assert answer.status_code in (400, 401), answer.status_code
    page = html.unescape(answer.text)
    assert "The launch from the LMS was refused" in page and REFUSALS[tamper] in page
    assert LOGIN_COOKIE not in answer.cookies and running.users() == before
    refused = [r.getMessage() for r in caplog.records if "LTI launch refused" in r.getMessage()]
    assert len(refused) == 1 and REFUSALS[tamper] in refused[0]


def test_a_replayed_launch_is_refused_even_with_its_cookies(hub):
    """The library checks the nonce against a cookie only: the same form post with the same
    cookies would log in again. The hub's used-nonce store refuses it."""
    running, platform, urls = hub
    captured = []
    assert launch(platform, "s06", captured).status_code == 302
    action, fields, cookies = captured[0]
    attacker = requests.Session()
    attacker.cookies.update(cookies)
    again = attacker.post(action, data=fields, allow_redirects=False, timeout=30)
    assert again.status_code == 400 and "this launch was used before" in again.text
    assert LOGIN_COOKIE not in again.cookies


def test_nothing_of_a_token_is_logged(hub, caplog):
    running, platform, urls = hub
    captured = []
    with caplog.at_level(logging.DEBUG):
        launch(platform, "s07", captured)
        platform.tamper = "foreign_key"
        try:
            launch(platform, "s08", captured)
        finally:
            platform.tamper = None
    # every logger but the test's own HTTP client's (urllib3 logs the URLs the "browser" asks for)
    text = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith("urllib3"))
    assert "LTI launch refused" in text
    for _, fields, _ in captured:
        token = fields["id_token"]
        for part in token.split("."):
            assert part[:40] not in text
        assert fields["state"] not in text


def test_the_printed_urls_are_the_ones_the_library_serves():
    """`course lms config`'s URLs come from lms/launch_urls.py: the installed library's handler
    paths under JupyterHub's hub prefix (the launch tests above use the printed ones)."""
    from ltiauthenticator.lti13.auth import LTI13Authenticator

    from course_tools.hub.lti_login import CourseLTI13Authenticator
    from course_tools.lms.launch_urls import launch_urls

    urls = launch_urls("https://example.edu/jupyter/")
    auth = CourseLTI13Authenticator()
    assert urls["login"] == "https://example.edu" + auth.login_url("/jupyter/hub/")
    assert urls["redirect"] == "https://example.edu" + auth.callback_url("/jupyter/hub/")
    assert urls["config"] == "https://example.edu" + auth.config_json_url("/jupyter/hub/")
    assert urls["target"] == "https://example.edu/jupyter/hub"
    paths = [path for path, *_ in auth.get_handlers(None)]
    # under the hub prefix; the last is the course's own (the tool's public key set, lti_jwks.py)
    assert paths == ["lti13/oauth_login", "lti13/oauth_callback", "lti13/config", "lti13/jwks"]
    assert urls["jwks"] == "https://example.edu/jupyter/hub/lti13/jwks"
    assert issubclass(CourseLTI13Authenticator, LTI13Authenticator)


def test_the_redirect_uri_as_target_link_uri_ends_on_a_405(hub):
    """Phase 1 printed the redirect URI as the target link URI: after a valid login the library
    sends the user to the target's path, and the redirect URI answers GET with 405."""
    running, platform, urls = hub
    platform.registration.set_launch_url(urls["redirect"])
    try:
        answer = launch(platform, "s09")
    finally:
        platform.registration.set_launch_url(urls["target"])
    assert answer.status_code == 302 and answer.headers["Location"] == "/hub/lti13/oauth_callback"
    assert requests.get(running.url + answer.headers["Location"], cookies=answer.cookies, timeout=30,
                        allow_redirects=False).status_code == 405


def test_a_rotated_platform_key_is_found_at_the_next_launch(hub):
    """The authenticator fetches the platform's JWKS at each launch: after the LMS rotates its
    key (a new key pair, the JWKS showing only the new one), the next launch is accepted."""
    from lms_platform import _key_pair

    running, platform, urls = hub
    old = (platform.registration.get_platform_private_key(), platform.registration.get_platform_public_key())
    private, public = _key_pair()
    platform.registration.set_platform_private_key(private).set_platform_public_key(public)
    try:
        assert launch(platform, "s10").status_code == 302
    finally:
        platform.registration.set_platform_private_key(old[0]).set_platform_public_key(old[1])
    assert "s10" in running.users()


def test_a_member_who_is_neither_learner_nor_grader_is_refused(hub):
    running, platform, urls = hub
    platform.members.append({"user_id": "mentor-mo", "roles": [MENTOR], "name": "Mo Mentor", "status": "Active"})
    try:
        answer = launch(platform, "mentor-mo")
    finally:
        platform.members.pop()
    assert answer.status_code == 400 and "no role the hub serves" in html.unescape(answer.text)
    assert "mentor-mo" not in running.users()


# ---------------------------------------------------------------------------- who gets in, where they land
def test_a_learner_the_roster_does_not_list_or_marks_dropped_is_refused_and_nothing_is_made(hub):
    """The roster (`course lms roster`) decides who is a student: a learner the LMS launches but the
    last sync did not list (another course's, or added since), or one it marks dropped, is refused."""
    running, platform, urls = hub
    platform.members.append({"user_id": "newcomer", "roles": [LEARNER], "name": "New Comer", "status": "Active"})
    before, book = running.users(), students(running.course)
    try:
        answer = launch(platform, "newcomer")
    finally:
        platform.members.pop()
    page = html.unescape(answer.text)
    assert answer.status_code == 400 and "not on this course's roster on the hub yet" in page, page[:500]
    dropped = launch(platform, "gone")
    assert dropped.status_code == 400 and "no longer enrolled" in html.unescape(dropped.text)
    assert running.users() == before and students(running.course) == book
    assert LOGIN_COOKIE not in answer.cookies and LOGIN_COOKIE not in dropped.cookies


def spawn_then(path: str) -> str:
    from urllib.parse import urlencode

    return f"/hub/spawn?{urlencode({'next': path})}"


@pytest.mark.parametrize("how", ["custom", "target"])
def test_a_link_for_a_released_assignment_lands_on_it(hub, how):
    """The assignment comes from the signed launch: the custom parameter, or the target link URI's query."""
    running, platform, urls = hub
    if how == "custom":
        platform.custom = {"assignment": RELEASED}
    else:
        platform.registration.set_launch_url(f"{urls['target']}?assignment={RELEASED}")
    try:
        answer = launch(platform, "s11")
    finally:
        platform.custom = None
        platform.registration.set_launch_url(urls["target"])
    assert answer.status_code == 302, answer.text[:300]
    assert answer.headers["Location"] == spawn_then(f"/hub/user-redirect/course/open?assignment={RELEASED}")


@pytest.mark.parametrize("asked", ["04_conv_backward", "../../etc/passwd", "01_forward_ops/../../x", "<b>x</b>", " "])
def test_a_link_for_anything_else_lands_on_the_plain_lab_never_on_a_path_made_of_it(hub, asked):
    """04 is a course assignment not released here; the others are not assignment ids at all."""
    running, platform, urls = hub
    platform.custom = {"assignment": asked}
    try:
        answer = launch(platform, "s12")
    finally:
        platform.custom = None
    assert answer.status_code == 302
    expected = "/hub/spawn" if not asked.strip() else spawn_then("/hub/user-redirect/course/open?unknown=1")
    assert answer.headers["Location"] == expected


# ---------------------------------------------------------------------------- the tool's public key set
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")


def test_the_hub_serves_the_tools_public_key_set_at_the_printed_url_and_nothing_private(hub, tmp_path):
    """`course lms config`'s JWKS URL, answered by the running hub from the key `course lms keys`
    made; the platform, told only that URL, accepts the tool's signed token requests (a roster sync)."""
    from course_tools.cli import main
    from course_tools.lms import keys
    from course_tools.lms.registration import registration
    from course_tools.lms.roster import sync

    running, platform, urls = hub
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["lms", "config", "--course", str(running.course.root)]) == 0
    printed = re.search(r"public keyset URL[^\n]*?(http\S+)", out.getvalue())[1]
    assert printed == f"{running.url}/hub/lti13/jwks"
    answer = requests.get(printed, timeout=30)
    assert answer.status_code == 200 and answer.headers["Content-Type"].startswith("application/json")
    served = answer.json()
    pem = registration(running.course).key_file.read_text()
    assert served == keys.public_key_set(pem)
    (key,) = served["keys"]
    assert key["kid"] == keys.key_id(pem) and key["kty"] == "RSA" and key["alg"] == "RS256"
    assert not set(key) & set(PRIVATE_MEMBERS)
    assert "PRIVATE" not in answer.text and all(line not in answer.text for line in pem.splitlines()[1:-1])
    # The platform fetches the tool's keys from the hub (as Canvas's "Public JWK URL" does) and checks
    # the tool's client assertion with them: the roster sync gets its token.
    platform.registration.set_tool_key_set(None)
    platform.registration.set_tool_key_set_url(printed)
    try:
        assert sync(running.course).requests > 0
        assert platform.registration.get_tool_key_set() == served
    finally:
        platform.registration.set_tool_key_set(served)


def test_a_key_others_could_read_is_not_served(hub):
    running, platform, urls = hub
    from course_tools.lms.registration import registration

    path = registration(running.course).key_file
    path.chmod(0o644)
    try:
        answer = requests.get(f"{running.url}/hub/lti13/jwks", timeout=30)
    finally:
        path.chmod(0o600)
    assert answer.status_code == 404 and "course lms keys" in answer.json()["error"]
    assert "keys" not in answer.json()


def test_an_existing_account_the_course_did_not_make_is_never_used():
    """A platform id that is a safe name and no reserved one, but already a Unix account of this
    machine that the course's tools did not make (a system account like _apt, a real user): refused."""
    import pwd

    from course_tools.hub import accounts, lti_accounts
    from course_tools.hub.roster import NAME
    from course_tools.lms.accounts import account_name

    taken = next(e.pw_name for e in pwd.getpwall() if NAME.fullmatch(e.pw_name) and not accounts.ours(e.pw_name)
                 and not account_name("https://lms.example.edu", e.pw_name)[1])
    with pytest.raises(lti_accounts.NotAdmitted, match=f"an account named {taken} exists"):
        lti_accounts.ensure_account(taken)


def test_the_students_server_uses_only_a_course_assignment_id():
    """course_student/lab_landing.py: the id is one of the course's own (the same string object the
    course defines, never the request's), and its page never repeats what the link said."""
    from course_lib import tasks
    from course_student.lab_landing import known_assignment, page

    asked = "".join(["01_forward", "_ops"])   # equal, but not the course's own string
    assert known_assignment(asked) == "01_forward_ops" and known_assignment(asked) is not asked
    assert any(known_assignment(asked) is name for name in tasks.ASSIGNMENTS)
    for bad in ("../01_forward_ops", "01_forward_ops/", "/etc/passwd", "", None, "01_FORWARD_OPS"):
        assert known_assignment(bad) is None
    shown = page("message", '/user/x/lab"><script>')
    assert "<script>" not in shown and "&quot;&gt;&lt;script&gt;" in shown
