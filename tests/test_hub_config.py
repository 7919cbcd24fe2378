"""hub/jupyterhub_config.py, the roster and the accounts, without starting a hub (seconds).

The whole hub, in a browser, is tests/test_hub.py; this checks what the configuration says
(the nbgrader model for one course with several graders) and that accounts made for a hub are
made private and removed again, and that no other account is ever touched.
"""
from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

import pytest

import refusals
from course_tools import access
from course_tools.hub import accounts, roster as rosters

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "hub" / "jupyterhub_config.py"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making Unix accounts needs root")


def test_the_roster_has_graders_and_students():
    roster = rosters.load()
    assert roster.graders == ["demo-instructor", "demo-ta"]
    assert roster.students == ["demo-ada", "demo-ben", "demo-cleo"]
    assert roster.student_names()[0] == ("demo-ada", "Ada", "Lovelace")


def test_a_roster_without_names_still_loads(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("username,role\ndemo-t,ta\ndemo-s,student\n")
    assert rosters.load(path).student_names() == [("demo-s", "", "")]


@pytest.mark.parametrize("text, error", [
    ("name,role\nx,student\n", "header"),
    ("username,role\nRoot!,student\ndemo-t,ta\n", "not a valid Unix user name"),
    ("username,role\ndemo-s,professor\n", "must be one of"),
    ("username,role\ndemo-s,student\n", "at least one instructor or TA"),
    ("username,role\ndemo-s,student\ndemo-s,ta\n", "listed twice"),
])
def test_a_bad_roster_says_what_is_wrong(tmp_path, text, error):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(rosters.RosterError, match=error):
        rosters.load(path)


@needs_root
def test_accounts_are_private_and_removed_and_others_never_touched():
    name = "demo-hubcfg-test"
    try:
        (entry,) = accounts.create([name])
        assert entry.pw_gecos == accounts.MARKER and stat.S_IMODE(os.stat(entry.pw_dir).st_mode) == 0o700
        home = Path(entry.pw_dir)
    finally:
        assert accounts.remove([name]) == [name]
    assert not home.exists() and name not in {p.pw_name for p in pwd.getpwall()}
    assert accounts.remove(["nobody"]) == [] and "nobody" in {p.pw_name for p in pwd.getpwall()}
    with pytest.raises(accounts.AccountError, match="exists already"):
        accounts.create(["nobody"])


def _load_config(course_id: str, root: Path):
    """The configuration as JupyterHub loads it. From a checkout every account can read (a fresh
    clone), it refuses to load, naming the chmod that closes the checkout: that is checked, the
    chmod run, the configuration loaded, and the checkout's mode put back."""
    from traitlets.config.loader import PyFileConfigLoader

    def load():
        return PyFileConfigLoader(CONFIG.name, path=str(CONFIG.parent)).load_config()

    os.environ.update(COURSE_HUB_ROOT=str(root), COURSE_ID=course_id, COURSE_HUB_PASSWORD="x")
    try:
        if not access.exposures({ROOT: "the checkout"}, [access.OTHERS]):
            return load()
        with pytest.raises(SystemExit) as refused:
            load()
        with refusals.done_as_told(str(refused.value)) as done:
            assert [path for _, path in done] == [ROOT], str(refused.value)
            return load()
    finally:
        for key in ("COURSE_HUB_ROOT", "COURSE_ID", "COURSE_HUB_PASSWORD"):
            os.environ.pop(key)


@needs_root
def test_the_configuration_follows_nbgraders_model_for_several_graders(tmp_path):
    pytest.importorskip("jupyterhub")
    course = "hubcfgtest"
    grader = f"grader-{course}"
    try:
        accounts.create([grader])
        config = _load_config(course, tmp_path)
    finally:
        accounts.remove([grader])
    hub = config.JupyterHub
    assert hub.spawner_class == "localprocess" and hub.authenticator_class == "dummy"
    assert config.Spawner.cmd == [str(tmp_path / "student-env" / "bin" / "jupyterhub-singleuser")]
    assert config.Spawner.environment["JUPYTER_CONFIG_PATH"] == str(tmp_path / "etc" / "jupyter")
    assert "PYTHONPATH" not in config.Spawner.env_keep and "PATH" not in config.Spawner.env_keep
    assert hub.load_groups == {f"formgrade-{course}": {"users": ["demo-instructor", "demo-ta"]}}
    roles = {role["name"]: role for role in hub.load_roles}
    assert roles[f"formgrade-{course}"]["groups"] == [f"formgrade-{course}"]
    assert f"access:services!service={course}" in roles[f"formgrade-{course}"]["scopes"]
    assert not any("users" in role for role in roles.values()), "only the graders' group gets the service"
    service, grading = hub.services
    assert service["name"] == course and service["user"] == grader
    # The grading service (`course serve`) runs in the same account, course folder and environment.
    assert grading["name"] == f"{course}-grading" and grading["user"] == grader and "url" not in grading
    assert grading["command"][:2] == [str(tmp_path / "grader-env" / "bin" / "course"), "serve"]
    assert grading["environment"]["COURSE_DIR"] == service["environment"]["COURSE_DIR"]
    assert service["command"] == [str(tmp_path / "grader-env" / "bin" / "jupyterhub-singleuser")]
    assert service["environment"]["COURSE_DIR"].endswith(f"/{grader}/{course}")
    assert set(config.Authenticator.allowed_users) == set(rosters.load().names())
