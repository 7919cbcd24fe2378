"""The LMS registration and the tool's key (course_tools/lms/registration.py, keys.py,
connector.py): bad input gets an error that names what is wrong; the key is 0600 and refused when
others can read it; access tokens are cached until they expire and asked with only the scopes
needed; `course lms config` prints what the LMS administrator enters."""
from __future__ import annotations

import os
import socket
import stat

import pytest
from lms_class import ASSIGNMENT, course_on, grade_class, platform_and_course, tool_key
from lms_platform import Platform

pytest.importorskip("pylti1p3")
pytest.importorskip("lti1p3platform")


def _main(*argv) -> int:
    from course_tools.cli import main

    return main(list(argv))


def test_no_registration_is_an_error_that_says_what_to_set(tmp_path, capsys):
    from course_tools.course_dir import init_course

    course = init_course(tmp_path / "course", "plain", exchange=tmp_path / "exchange")
    assert _main("lms", "roster", "--course", str(course.root)) != 0
    err = capsys.readouterr().err
    assert "no LMS registration configured" in err and "c.LMS.issuer" in err and "docs/lms.md" in err


def test_an_unreachable_platform_is_named(tmp_path, capsys):
    with socket.socket() as probe:   # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    key, jwk = tool_key(tmp_path)
    platform = Platform(jwk, [])
    platform.url = f"http://127.0.0.1:{port}"
    course = course_on(platform, tmp_path, key)
    assert _main("lms", "roster", "--course", str(course.root)) != 0
    err = capsys.readouterr().err
    assert f"cannot reach the platform at http://127.0.0.1:{port}/token" in err


def test_plain_http_to_another_machine_is_refused(tmp_path):
    from course_tools.lms.registration import LmsError, check_url

    check_url("https://lms.example.edu/token", "x")
    check_url("http://127.0.0.1:8000/token", "x")
    with pytest.raises(LmsError, match="plain http"):
        check_url("http://lms.example.edu/token", "c.LMS.token_url")


def test_the_key_is_made_for_its_owner_only_and_refused_once_others_can_read_it(tmp_path, capsys):
    from course_tools.lms import keys
    from course_tools.lms.registration import LmsError

    path, jwk = tool_key(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert jwk["alg"] == "RS256" and jwk["kid"] and "d" not in jwk   # the public half only
    assert "PRIVATE KEY" in keys.load(path, tmp_path / "exchange")
    with pytest.raises(LmsError, match="exists already"):
        keys.generate(path, tmp_path / "exchange")
    os.chmod(path, 0o644)
    with pytest.raises(LmsError, match=r"can be read by others \(mode 0644\): run `chmod 600"):
        keys.load(path, tmp_path / "exchange")
    with pytest.raises(LmsError, match="inside the exchange"):
        keys.generate(tmp_path / "exchange" / "k.pem", tmp_path / "exchange")
    from course_tools.paths import ROOT

    with pytest.raises(LmsError, match="inside the course bundle"):
        keys.generate(ROOT / "tool.pem", tmp_path / "exchange")
    assert not (ROOT / "tool.pem").exists()


def test_course_lms_keys_and_config(tmp_path, capsys):
    platform, course = platform_and_course(tmp_path)
    key = tmp_path / "second" / "tool.pem"
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + f'c.LMS.private_key_file = r"{key}"\n'
                      'c.LMS.tool_url = "https://hub.example.edu"\n')
    assert _main("lms", "keys", "--course", str(course.root)) == 0
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert _main("lms", "keys", "--course", str(course.root)) != 0   # kept unless --replace
    capsys.readouterr()
    assert _main("lms", "config", "--course", str(course.root)) == 0
    out = capsys.readouterr().out
    assert "https://hub.example.edu/hub/lti13/oauth_login" in out and "BEGIN PUBLIC KEY" in out
    assert '"kty": "RSA"' in out and "PRIVATE" not in out and "tool-42" in out


def test_tokens_are_cached_until_they_expire_with_only_the_scopes_asked(tmp_path):
    from course_tools.course_dir import Course
    from course_tools.lms import keys
    from course_tools.lms.connector import AGS_SCOPES, NRPS_SCOPES, connect
    from course_tools.lms.registration import registration

    platform, course = platform_and_course(tmp_path)
    with platform:
        reg = registration(Course(course.root))
        connector = connect(reg, keys.load(reg.key_file, course.exchange))
        first = connector.get_access_token(NRPS_SCOPES)
        assert connector.get_access_token(NRPS_SCOPES) == first and len(platform.token_scopes) == 1
        connector.get_access_token(AGS_SCOPES)
        assert platform.token_scopes[1] == sorted(AGS_SCOPES)
        connector._expires[tuple(sorted(NRPS_SCOPES))] = 0   # as if its hour had passed
        connector.get_access_token(NRPS_SCOPES)
        assert len(platform.token_scopes) == 3


def test_next_page_links_keep_their_case():
    """PyLTI1p3 lower-cases the Link header (a cursor 'Pg7' becomes 'pg7'): connector.next_link keeps it."""
    from course_tools.lms.connector import next_link

    header = '<https://lms.example.edu/api/Members?Cursor=AbC9>; rel="next", <https://x/y>; rel="last"'
    assert next_link(header) == "https://lms.example.edu/api/Members?Cursor=AbC9"
    assert next_link('<https://x/y>; rel="last"') is None


def test_push_from_the_command_line_and_its_dry_run(tmp_path, capsys):
    platform, course = platform_and_course(tmp_path)
    with platform:
        assert _main("lms", "roster", "--course", str(course.root)) == 0
        grade_class(course)
        assert _main("lms", "push", ASSIGNMENT, "--dry-run", "--course", str(course.root)) == 0
        out = capsys.readouterr().out
        assert "27 scores to send" in out and "dry run: nothing sent" in out and not platform.posts
        assert _main("lms", "push", ASSIGNMENT, "--course", str(course.root)) == 0
        assert "27 scores sent" in capsys.readouterr().out and len(platform.posts) == 27
        assert _main("lms", "push", "--course", str(course.root)) != 0   # no id
