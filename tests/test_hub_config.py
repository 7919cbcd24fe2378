"""hub/jupyterhub_config.py, the roster and the accounts, without starting a hub (seconds).

The whole hub, in a browser, is tests/test_hub.py; this checks what the configuration says
(the nbgrader model for one course with several graders) and that accounts made for a hub are
made private and removed again, and that no other account is ever touched.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
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
    assert roster.sections() == {"demo-ada": "lab-a", "demo-ben": "lab-b", "demo-cleo": "lab-a"}


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
        # What the account leaves in /tmp: a file, a folder, a file inside root's own folder, a link.
        shared = Path(tempfile.mkdtemp(prefix="hubcfg-shared-"))
        os.chmod(shared, 0o1777)
        left = [Path(tempfile.gettempdir()) / f"{name}-left", Path("/dev/shm") / f"{name}-segment", shared / "inside"]
        script = (f"touch {left[0]} {left[1]} && mkdir {left[2]} && touch {left[2]}/deep "
                  f"&& ln -s /etc/passwd {shared}/link")
        subprocess.run(["runuser", "-u", name, "--", "sh", "-c", script], check=True)
    finally:
        assert accounts.remove([name]) == [name]
    assert not home.exists() and name not in {p.pw_name for p in pwd.getpwall()}
    assert not any(path.exists() for path in left) and not (shared / "link").is_symlink()
    assert shared.is_dir() and Path("/etc/passwd").is_file()   # root's folder and the link's target stay
    shared.rmdir()
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
    assert grading["name"] == f"{course}-grading" and grading["user"] == grader
    # Its URL answers students' own deadlines (service/deadline_api.py): every user's token may reach
    # it, and their servers are told where it is.
    assert config.Spawner.environment["COURSE_GRADING_URL"] == f"{grading['url']}/services/{course}-grading/"
    assert roles["user"]["scopes"] == ["self", f"access:services!service={course}-grading"]
    assert grading["command"][:2] == [str(tmp_path / "grader-env" / "bin" / "course"), "serve"]
    assert grading["environment"]["COURSE_DIR"] == service["environment"]["COURSE_DIR"]
    assert service["command"] == [str(tmp_path / "grader-env" / "bin" / "jupyterhub-singleuser")]
    assert service["environment"]["COURSE_DIR"].endswith(f"/{grader}/{course}")
    assert set(config.Authenticator.allowed_users) == set(rosters.load().names())


@needs_root
def test_course_hub_login_lti_logs_in_through_the_courses_lms_registration(tmp_path, monkeypatch):
    """COURSE_HUB_LOGIN=lti: the LTI 1.3 authenticator from the course's c.LMS (issuer, client id,
    deployment, authorization and JWKS URLs), the graders' group managed by it (no load_groups, no
    password); a registration without the launch's settings stops the hub naming them."""
    pytest.importorskip("ltiauthenticator")
    from course_tools.course_dir import init_course

    course_id = "hubltitest"
    grader = f"grader-{course_id}"
    folder = init_course(tmp_path / "course", course_id, exchange=tmp_path / "exchange").root
    settings = folder / "nbgrader_config.py"
    plain = settings.read_text()
    settings.write_text(plain + 'c.LMS.issuer = "https://lms.example.edu"\nc.LMS.client_id = "tool-7"\n'
                        'c.LMS.token_url = "https://lms.example.edu/token"\n')
    monkeypatch.setenv("COURSE_HUB_LOGIN", "lti")
    monkeypatch.setenv("COURSE_HUB_COURSE_DIR", str(folder))
    try:
        accounts.create([grader])
        with pytest.raises(SystemExit, match=r"c\.LMS\.deployment_id, c\.LMS\.auth_login_url, c\.LMS\.jwks_url"):
            _load_config(course_id, tmp_path)
        settings.write_text(settings.read_text() + 'c.LMS.deployment_id = "dep-1"\n'
                            'c.LMS.auth_login_url = "https://lms.example.edu/auth"\n'
                            'c.LMS.jwks_url = "https://lms.example.edu/jwks"\n')
        config = _load_config(course_id, tmp_path)
    finally:
        accounts.remove([grader])
    assert config.JupyterHub.authenticator_class == "course_tools.hub.lti_login.CourseLTI13Authenticator"
    lti = config.CourseLTI13Authenticator
    assert (lti.issuer, lti.client_id, lti.deployment_ids) == ("https://lms.example.edu", {"tool-7"}, {"dep-1"})
    assert (lti.authorize_url, lti.jwks_endpoint) == ("https://lms.example.edu/auth", "https://lms.example.edu/jwks")
    assert lti.graders_group == f"formgrade-{course_id}" and lti.nonce_store == str(tmp_path / "state" /
                                                                                   "lti-nonces.sqlite")
    assert "load_groups" not in config.JupyterHub and "DummyAuthenticator" not in config
    assert "allowed_users" not in config.Authenticator


def test_the_students_lab_extension_is_where_jupyterlab_finds_and_loads_it(tmp_path):
    """deploy.install_lab_extensions puts hub/labextensions/course-feedback-link into an
    environment where JupyterLab's server lists it in the page config (what the browser loads),
    readable by every account; its entry registers the container JupyterLab's loader asks for."""
    from jupyterlab_server.config import get_federated_extensions

    from course_tools.hub import deploy

    env = tmp_path / "student-env"
    deploy.install_lab_extensions(env)
    deploy.install_lab_extensions(env)   # again at the next start: replaced, not nested
    found = get_federated_extensions([str(env / "share" / "jupyter" / "labextensions")])
    assert sorted(found) == ["course-deadlines", "course-feedback-link"], found
    build = found["course-feedback-link"]["jupyterlab"]["_build"]
    entry = Path(found["course-feedback-link"]["ext_path"]) / build["load"]
    assert build["extension"] == "./extension" and entry.is_file()
    assert stat.S_IMODE(entry.stat().st_mode) == 0o644
    script = entry.read_text()
    assert 'registry["course-feedback-link"] = container' in script and '"filebrowser:go-to-path"' in script


NODE_HARNESS = r'''
// What JupyterLab's loader does with the entry (bootstrap.js: init, then get("./extension")),
// then the plugin's activate with an app that has the two things it uses.
global.window = {opened: [], open: (url, target, features) => window.opened.push([url, target, features])};
// No Assignments tab under node: a document with nothing in it (the tab itself: tests/test_feedback_link_tab.py).
global.document = {addEventListener: () => {}, body: {}, querySelectorAll: () => []};
global.MutationObserver = class { observe() {} };
require(process.argv[2]);
const container = window._JUPYTERLAB["course-feedback-link"];
(async () => {
  await container.init({});
  const plugins = (await container.get("./extension"))().default;
  let listener;
  const folders = {"04_conv_backward/feedback/2026-12-02 08:00:00.5 UTC": [
      {type: "file", name: "04_conv_backward.html", path: "04_conv_backward/feedback/2026-12-02 08:00:00.5 UTC/04_conv_backward.html"},
      {type: "file", name: "notes.txt", path: "04_conv_backward/feedback/2026-12-02 08:00:00.5 UTC/notes.txt"}]};
  const app = {commands: {commandExecuted: {connect: f => { listener = f; }}},
               serviceManager: {serverSettings: {baseUrl: "/user/demo-ada/"},
                                contents: {get: async path => ({content: folders[path] || []})}}};
  plugins.forEach(p => p.activate(app));
  for (const [id, path] of [["filebrowser:go-to-path", "04_conv_backward/feedback/2026-12-02 08:00:00.5 UTC"],
                            ["filebrowser:go-to-path", "04_conv_backward"],
                            ["docmanager:open", "04_conv_backward/feedback/2026-12-02 08:00:00.5 UTC"]]) {
    listener(null, {id, args: {path}});
  }
  await new Promise(resolve => setTimeout(resolve, 50));
  console.log(JSON.stringify({ids: plugins.map(p => p.id), opened: window.opened}));
})();
'''


@pytest.mark.skipif(not shutil.which("node"), reason="needs node (Debian's nodejs) to run the extension's script")
def test_view_feedback_opens_each_page_of_that_feedback_folder_only(tmp_path):
    """The extension's script under node, loaded as JupyterLab's loader loads it: after
    filebrowser:go-to-path on a feedback/<time>/ folder (nbgrader's "(view feedback)") it opens
    that folder's HTML pages from the server's /files/, in a tab of their own without an opener;
    on any other folder or command, nothing."""
    harness = tmp_path / "harness.js"
    harness.write_text(NODE_HARNESS)
    entry = ROOT / "hub" / "labextensions" / "course-feedback-link" / "static" / "remoteEntry.js"
    ran = subprocess.run(["node", str(harness), str(entry)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["ids"] == ["course-feedback-link:open"]
    assert result["opened"] == [["/user/demo-ada/files/04_conv_backward/feedback/2026-12-02%2008%3A00%3A00.5%20UTC/"
                                 "04_conv_backward.html", "_blank", "noopener"]], result


def test_updating_a_hub_refuses_changing_nothing_without_a_deployment_or_with_new_dependencies(tmp_path):
    """`make hub-update` (course_tools/hub/update.py) on a root with no deployment, and with a
    checkout whose pyproject.toml differs from the hub's copy: each refusal names the reason and
    leaves the files as they were."""
    from course_tools.hub import update
    from course_tools.hub.layout import HubLayout

    layout = HubLayout(tmp_path / "hub", "update-test")
    with pytest.raises(update.UpdateError, match="no hub deployment|run it as root"):
        update.update(layout)
    assert not layout.root.exists()
    layout.bundle.mkdir(parents=True)
    (layout.bundle / "pyproject.toml").write_text("[project]\nname = 'older'\n")
    with pytest.raises(update.UpdateError, match="pyproject.toml differs"):
        update._refuse_changed_dependencies(layout, ROOT)
    assert (layout.bundle / "pyproject.toml").read_text() == "[project]\nname = 'older'\n"


@needs_root
def test_updating_a_hub_swaps_in_the_whole_bundle_closed_to_students(tmp_path):
    """The new bundle/ holds the checkout's parts, root's with the grader group, 0750, and
    nothing of the copy or of the old bundle is left beside it."""
    from course_tools.hub import update
    from course_tools.hub.layout import HubLayout

    layout = HubLayout(tmp_path / "hub", "update-test")
    layout.bundle.mkdir(parents=True)
    (layout.bundle / "stale.txt").write_text("from the start of the semester")
    update.swap_in_bundle(layout, grader_gid=4242)
    top = layout.bundle.stat()
    assert (top.st_uid, top.st_gid, stat.S_IMODE(top.st_mode)) == (0, 4242, 0o750)
    assert not (layout.bundle / "stale.txt").exists()
    assert (layout.bundle / "autograder" / "conftest.py").read_bytes() == (ROOT / "autograder" / "conftest.py").read_bytes()
    assert sorted(p.name for p in layout.root.iterdir()) == ["bundle"]
