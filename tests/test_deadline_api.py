"""Students see their own deadline (issue 41): the grading service's deadlines page, asked with a
student's hub token, answers that student's deadlines and nobody else's; `course fetch` and
`course submit` print it, with a warning when it is past or near, and say nothing (or that it is
not known) where no service answers.

A hostile student tries to read a classmate's deadline: a name in the query, in the path, a
path with dots, the classmate's cookie name or a forwarded-user header without a token, a made-up
token, a service's token, a token without the scope: each is refused and none reveals ada's date.
The tokens are a real JupyterHub's, in this process (tests/deadline_hub.py), and so is its answer
to the service's HubAuth.

The same student at the other door: their own JupyterLab server (the Assignments tab's way,
course_student/lab_deadlines.py, started with ada's hub token: tests/student_server.py), asked over
plain HTTP with a classmate's name in the query, a classmate's or a service's hub token as a
parameter or in the Authorization header, forwarded-user headers and cookie names: it answers
ada's own deadlines every time, or refuses (403 without its login, 404 off its route).
"""
from __future__ import annotations

import datetime
import http.client
import json
import urllib.parse

import pytest

from course_student import deadlines
from course_student.commands import fetch
from tests.deadline_hub import real_hub
from tests.deadline_support import A, B, COURSE_ID, DUE_A, DUE_B, EXTENDED_A, PREFIX, ZONE, course_with_extension, free_port
from tests.student_server import start_lab

D = datetime.datetime


@pytest.fixture(scope="module")
def course_behind_a_hub(tmp_path_factory):
    """(course, the address students are given, the hub's tokens by name: tests/deadline_hub.py,
    ada's own JupyterLab server: started, not waited for)."""
    tmp = tmp_path_factory.mktemp("deadlines")
    with real_hub(tmp / "hub") as hub:
        # ada's server starts while the course is made (it needs only her token and the service's address).
        lab = start_lab(tmp / "ada", "ada", hub.tokens["ada"], hub.grading_url, tmp / "exchange")
        try:
            made = course_with_extension(tmp)
            hub.serve(made)
            yield made, hub.grading_url, hub.tokens, lab
        finally:
            lab.stop()


@pytest.fixture(scope="module")
def service(course_behind_a_hub):
    """(course, the address students are given, the hub's tokens by name)."""
    return course_behind_a_hub[:3]


def _get(url: str, path: str, headers: dict | None = None) -> tuple[int, dict]:
    """GET ``path`` sent as it is (no client-side normalisation of dots or escapes)."""
    where = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    try:
        return response.status, json.loads(body)
    except ValueError:
        return response.status, {"body": body}


def _with_tokens(headers: dict, tokens: dict[str, str]) -> dict:
    """``headers`` with each {name} replaced by the hub's token of that name."""
    return {key: value.format(**tokens) for key, value in headers.items()}


def _iso(moment: D) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_each_student_gets_their_own_deadlines_and_the_extension_only_reaches_its_student(service):
    _, url, tokens = service
    status, ada = _get(url, PREFIX + "deadlines", {"Authorization": f"token {tokens['ada']}"})
    assert status == 200 and ada["student"] == "ada" and ada["zone"] == ZONE and ada["course_id"] == COURSE_ID
    # The course's late policy (course init's: 10 % a started day) ends the late window 9 days after each deadline.
    assert ada["assignments"][A] == {"due": _iso(EXTENDED_A), "extended": True, "assignment_due": _iso(DUE_A),
                                     "late_until": _iso(EXTENDED_A + datetime.timedelta(days=9))}
    assert ada["assignments"][B] == {"due": _iso(DUE_B), "extended": False, "assignment_due": _iso(DUE_B),
                                     "late_until": _iso(DUE_B + datetime.timedelta(days=9))}
    status, ben = _get(url, PREFIX + "deadlines", {"Authorization": f"bearer {tokens['ben']}"})
    assert status == 200 and ben["student"] == "ben" and ben["assignments"][A]["due"] == _iso(DUE_A)
    assert "ada" not in json.dumps(ben) and _iso(EXTENDED_A) not in json.dumps(ben)


@pytest.mark.parametrize("path, headers, status", [
    # ben names ada in the query, with his own token and with none
    (PREFIX + "deadlines?student=ada", {"Authorization": "token {ben}"}, 400),
    (PREFIX + "deadlines?user=ada&student=ada", {}, 400),
    (PREFIX + "deadlines?token={ada}", {"Authorization": "token {ben}"}, 400),
    # ... in the path, plainly, with dots and with an escaped slash
    (PREFIX + "deadlines/ada", {"Authorization": "token {ben}"}, 404),
    (PREFIX + "ada/../deadlines", {"Authorization": "token {ben}"}, 404),
    (PREFIX + "deadlines/../deadlines/ada", {"Authorization": "token {ben}"}, 404),
    (PREFIX + "deadlines%2Fada", {"Authorization": "token {ben}"}, 404),
    (f"/services/{COURSE_ID}-grading/../../user/ada/deadlines", {"Authorization": "token {ben}"}, 404),
    # ... as a header a proxy might set, or the hub's cookie names, without a token
    (PREFIX + "deadlines", {"X-Forwarded-User": "ada", "Remote-User": "ada"}, 401),
    (PREFIX + "deadlines", {"Cookie": "jupyterhub-user-ada=x; jupyterhub-services-ext-grading=x"}, 401),
    (PREFIX + "deadlines", {"Authorization": "ada"}, 401),
    # ... with a token the hub does not know, a service's token, or one of ada's without the scope
    (PREFIX + "deadlines", {"Authorization": "token {made-up}"}, 403),
    (PREFIX + "deadlines", {"Authorization": "token {service}"}, 403),
    (PREFIX + "deadlines", {"Authorization": "token {ada-unscoped}"}, 403),
])
def test_a_student_cannot_read_a_classmates_deadline(service, path, headers, status):
    _, url, tokens = service
    got, body = _get(url, path.format(**tokens), _with_tokens(headers, tokens))
    assert got == status, (got, body)
    assert _iso(EXTENDED_A) not in json.dumps(body) and "assignments" not in body


@pytest.mark.parametrize("token, why", [("made-up", "the hub does not know this token"),
                                        ("service", "a service has no deadlines"),
                                        ("ada-unscoped", "this token lacks the scope ['access:services!service=")])
def test_each_refused_token_is_refused_for_what_the_hub_says_of_it(service, token, why):
    """The hub's own answer decides: a token it never issued, its record of a service's token, and
    the scopes it gives one of ada's tokens (so each 403 above is not the same refusal thrice)."""
    _, url, tokens = service
    got, body = _get(url, PREFIX + "deadlines", {"Authorization": f"token {tokens[token]}"})
    assert got == 403 and body["error"].startswith(why), (got, body)


def test_course_fetch_prints_the_students_own_extended_deadline_in_utc_and_the_course_zone(service, tmp_path,
                                                                                          monkeypatch, capsys):
    """The real student command (nbgrader's fetch from the exchange), on ada's server."""
    made, url, tokens = service
    monkeypatch.setenv(deadlines.GRADING_URL, url)
    monkeypatch.setenv(deadlines.TOKEN, tokens["ada"])
    assert fetch(A, False, tmp_path, COURSE_ID, made.exchange, "ada") == 0
    out = capsys.readouterr().out
    # 29 March is after the clock change (CEST, UTC+2); 27 March before it (CET, UTC+1).
    assert (f"Your deadline for {A}: 2027-03-29 12:00 UTC (2027-03-29 14:00 {ZONE}, CEST), extended (the "
            f"assignment's due date is 2027-03-27 12:00 UTC (2027-03-27 13:00 {ZONE}, CET)).") in out


def test_where_no_service_answers_fetch_and_submit_say_nothing_or_that_the_deadline_is_not_known(capsys):
    assert deadlines.ask({}) == deadlines.OwnDeadlines(known=False)
    assert deadlines.lines_for(deadlines.ask({}), A, D(2027, 1, 1), submitting=True) == ([], [])
    closed = deadlines.ask({deadlines.GRADING_URL: f"http://127.0.0.1:{free_port()}/", deadlines.TOKEN: "t"},
                           timeout=2)
    lines, warnings = deadlines.lines_for(closed, A, D(2027, 1, 1), submitting=True)
    assert not closed.known and warnings == [] and lines[0].startswith(
        "Your deadline is not known here: the grading service did not answer")
    missing = deadlines.ask({deadlines.GRADING_URL: "http://127.0.0.1:1/"})
    assert "JUPYTERHUB_API_TOKEN is not set" in missing.why


def test_submit_warns_when_late_and_in_the_last_hour_from_the_students_own_deadline(service):
    _, url, tokens = service
    ada = deadlines.ask({deadlines.GRADING_URL: url, deadlines.TOKEN: tokens["ada"]})
    ben = deadlines.ask({deadlines.GRADING_URL: url, deadlines.TOKEN: tokens["ben"]})
    an_hour_late = DUE_A + datetime.timedelta(hours=1, minutes=30)
    # ben is late; ada, on her extension, is not, and gets no warning.
    lines, warnings = deadlines.lines_for(ben, A, an_hour_late, submitting=True)
    assert lines == [f"Your deadline for {A}: 2027-03-27 12:00 UTC (2027-03-27 13:00 {ZONE}, CET)."]
    assert warnings == ["this submission came 1 hour 30 minutes after your deadline, so it counts as late; late "
                        f"work earns points until 2027-04-05 12:00 UTC (2027-04-05 14:00 {ZONE}, CEST)."]
    assert deadlines.lines_for(ada, A, an_hour_late, submitting=True)[1] == []
    # ada, 20 minutes before her own deadline; then after her late window.
    assert deadlines.lines_for(ada, A, EXTENDED_A - datetime.timedelta(minutes=20), submitting=True)[1] == [
        "your deadline is in 20 minutes: a submission after it counts as late."]
    after = deadlines.lines_for(ada, A, EXTENDED_A + datetime.timedelta(days=10), submitting=False)[1]
    assert after == ["your deadline passed 10 days ago; what you submit now counts as late; late work no longer "
                     f"earns points (it did until 2027-04-07 12:00 UTC (2027-04-07 14:00 {ZONE}, CEST))."]


# ---------------------------------------------------------------------------------- the student's own server
# The Assignments tab asks the student's own Jupyter server (course_student/lab_deadlines.py), which
# asks the page above with the server's own hub token. What it guarantees: it reads nothing of the
# request (no parameter, header or cookie reaches the service; it always sends its own token), and
# it answers only on its one path, to whoever logged in to that server.
LAB_ROUTE = "/course/deadlines"


@pytest.fixture(scope="module")
def adas_server(course_behind_a_hub):
    """ada's JupyterLab server as the hub starts it (her own hub token, the service's address), up;
    and the hub's tokens with the server's own login token as "lab"."""
    *_, tokens, lab = course_behind_a_hub
    lab.wait_until_up()
    return lab, {**tokens, "lab": lab.token}


ADAS_OWN = {A: {"due": _iso(EXTENDED_A), "extended": True, "assignment_due": _iso(DUE_A),
                "late_until": _iso(EXTENDED_A + datetime.timedelta(days=9))},
            B: {"due": _iso(DUE_B), "extended": False, "assignment_due": _iso(DUE_B),
                "late_until": _iso(DUE_B + datetime.timedelta(days=9))}}


@pytest.mark.slow   # ada's JupyterLab server starts for these (beside the making of the course): 10-20 s
@pytest.mark.parametrize("path, headers", [
    # ben, at ada's browser (logged in to her server), names himself in the query, or redirects the
    # server's question to his token or to another service
    (LAB_ROUTE + "?student=ben&user=ben", {"Authorization": "token {lab}"}),
    (LAB_ROUTE + "?token={lab}&JUPYTERHUB_API_TOKEN={ben}&COURSE_GRADING_URL=http://127.0.0.1:1/", {}),
    # ... sends his own hub token, or the service's, in the header the server would forward if it forwarded any
    (LAB_ROUTE + "?token={lab}", {"Authorization": "token {ben}"}),
    (LAB_ROUTE + "?token={lab}", {"Authorization": "token {service}"}),
    # ... a forwarded-user header, the hub's cookie names
    (LAB_ROUTE, {"Authorization": "token {lab}", "X-Forwarded-User": "ben", "Remote-User": "ben",
                 "Cookie": "jupyterhub-user-ben=x; jupyterhub-services-ext-grading=x"}),
])
def test_a_students_own_server_answers_only_its_students_deadlines_whatever_the_request_says(adas_server, path,
                                                                                             headers):
    lab, tokens = adas_server
    got, body = _get(lab.url, path.format(**tokens), _with_tokens(headers, tokens))
    assert got == 200, (got, body)
    assert body["known"] is True and body["zone"] == ZONE and body["assignments"] == ADAS_OWN


@pytest.mark.slow   # ada's JupyterLab server starts for these (beside the making of the course): 10-20 s
@pytest.mark.parametrize("path, headers, status", [
    # a classmate's hub token, a made-up one, or none is not a login to ada's server
    (LAB_ROUTE, {"Authorization": "token {ben}"}, 403),
    (LAB_ROUTE, {"Authorization": "token {made-up}"}, 403),
    (LAB_ROUTE, {"X-Forwarded-User": "ada", "Cookie": "jupyterhub-user-ada=x"}, 403),
    # a classmate's name in the path, plainly, with dots, with an escaped slash: not the route
    (LAB_ROUTE + "/ben", {"Authorization": "token {lab}"}, 404),
    ("/course/ben/../deadlines", {"Authorization": "token {lab}"}, 404),
    (LAB_ROUTE + "/../deadlines/ben", {"Authorization": "token {lab}"}, 404),
    (LAB_ROUTE + "%2Fben", {"Authorization": "token {lab}"}, 404),
])
def test_a_students_own_server_refuses_what_is_not_its_login_or_its_route(adas_server, path, headers, status):
    lab, tokens = adas_server
    got, body = _get(lab.url, path.format(**tokens), _with_tokens(headers, tokens))
    assert got == status, (got, body)
    assert _iso(EXTENDED_A) not in json.dumps(body) and "assignments" not in body
