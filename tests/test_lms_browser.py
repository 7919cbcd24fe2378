"""A student clicks an assignment's link in the LMS and lands in their own JupyterLab with it, in
real Chromium through a running JupyterHub (issue 42).

The LMS is the test platform (lti1p3platform, tests/lms_launch.py) on http://localhost; the hub
is JupyterHub itself (`python -m jupyterhub`, its proxy and LocalProcessSpawner) on
https://127.0.0.1 with a certificate made here, logging in through the course's LTI 1.3
authenticator as hub/jupyterhub_config.py configures it (lti_settings.configure). The launch's
form post goes from the LMS's page to the hub: a cross-site POST, so the authenticator's state
and nonce cookies must be ``SameSite=None; Secure`` (lti_login.CourseLoginHandler).

The people are real Unix accounts (made and removed as the hub's are, course_tools/hub/accounts.py):
  lbx-ann  a learner on the roster (`course lms roster`): her first launch makes her account, her
           server starts as her, fetches 01_forward_ops from the exchange (released there) and opens
           its notebook; a second launch is the same user, same account, and keeps her work;
  lbx-tim  a TA: his launch puts him in the graders' group, lands on the hub's home, and makes no
           Unix account and no gradebook student.
"""
from __future__ import annotations

import datetime
import ipaddress
import json
import os
import pwd
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

from tests.hub_browser import CHROMIUM_ARGS, CHROMIUM, missing_browser
from tests.lti_hub import free_port

pytest.importorskip("ltiauthenticator")
pytest.importorskip("lti1p3platform")
requests = pytest.importorskip("requests")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(missing_browser() is not None, reason=f"needs {missing_browser()}"),
              pytest.mark.skipif(os.geteuid() != 0, reason="makes Unix accounts (root)")]

COURSE_ID = "lmstest"
GRADERS = f"formgrade-{COURSE_ID}"
ASSIGNMENT = "01_forward_ops"
ANN, TIM = "lbx-ann", "lbx-tim"
LAB_MS = 180_000   # a first launch starts JupyterLab: slow on 2 busy cores
# Chromium still sends a cookie set without SameSite on a cross-site top-level POST for its first two
# minutes ("Lax+POST", a stopgap other browsers do not have): a launch would pass here without the
# authenticator's SameSite=None cookies. This switches the stopgap off, so the test fails without them.
STRICT_SAMESITE = "SameSiteDefaultChecksMethodRigorously"


def _members() -> list[dict]:
    from lms_platform import LEARNER, TA

    return [{"user_id": ANN, "roles": [LEARNER], "given_name": "Ann", "family_name": "Launch", "name": "Ann Launch",
             "email": "ann@example.edu", "status": "Active"},
            {"user_id": TIM, "roles": [TA], "given_name": "Tim", "family_name": "Assist", "name": "Tim Assist",
             "status": "Active"}]


def _certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (the `cryptography` package), valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    key_path, cert_path = folder / "hub.key", folder / "hub.crt"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_path, cert_path


def _release(exchange: Path) -> None:
    """01_forward_ops in the exchange's outbound folder, as `course release` leaves it (a small notebook)."""
    import nbformat

    folder = exchange / COURSE_ID / "outbound" / ASSIGNMENT
    folder.mkdir(parents=True)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 01 forward ops (released)")])
    nbformat.write(notebook, folder / f"{ASSIGNMENT}.ipynb")
    for path in (exchange / COURSE_ID, exchange / COURSE_ID / "outbound", folder):
        path.chmod(0o755)
    (folder / f"{ASSIGNMENT}.ipynb").chmod(0o644)


HUB_CONFIG = """\
from pathlib import Path
from course_tools.hub import lti_settings

c = get_config()  # noqa: F821
lti_settings.configure(c, Path({course!r}), {graders!r}, Path({state!r}))   # as hub/jupyterhub_config.py
c.JupyterHub.bind_url = "https://127.0.0.1:{port}"
c.JupyterHub.ssl_key, c.JupyterHub.ssl_cert = {key!r}, {cert!r}
c.JupyterHub.hub_ip, c.JupyterHub.hub_port = "127.0.0.1", {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.ConfigurableHTTPProxy.pid_file = {state!r} + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///{state}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = {state!r} + "/cookie_secret"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.service_check_interval = 0
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{python!r}, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
c.Spawner.environment = {{"PATH": {path!r}, "JUPYTER_CONFIG_PATH": {etc!r}, "JUPYTER_PATH": {share!r},
                          "JUPYTERLAB_DIR": {share!r} + "/lab"}}
c.Spawner.start_timeout = c.Spawner.http_timeout = 180
c.JupyterHub.services = [{{"name": "test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "test-reader", "scopes": ["list:users", "read:users", "read:groups"], "services": ["test"]}}]
"""


class Hub:
    """`python -m jupyterhub` with HUB_CONFIG on https://127.0.0.1:``port``, its log in state/jupyterhub.log."""

    def __init__(self, folder: Path, port: int, course: Path, etc: Path):
        from course_tools.paths import ROOT

        self.state = folder / "state"
        self.state.mkdir()
        key, cert = _certificate(folder)
        self.token, self.root = os.urandom(16).hex(), ROOT
        self.url = f"https://127.0.0.1:{port}"
        env, prefix = _student_env(folder), Path(sys.prefix).resolve()
        (self.state / "jupyterhub_config.py").write_text(HUB_CONFIG.format(
            course=str(course), graders=GRADERS, state=str(self.state), port=port, key=str(key), cert=str(cert),
            hub_port=free_port(), proxy_port=free_port(), python=str(env / "bin" / "python"),
            path=f"{env / 'bin'}:/usr/bin:/bin", etc=f"{etc}:{prefix / 'etc' / 'jupyter'}",
            share=str(prefix / "share" / "jupyter"), token=self.token))
        self.log = self.state / "jupyterhub.log"

    def __enter__(self) -> "Hub":
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(self.state / "jupyterhub_config.py")], cwd=self.state,
            env={**os.environ, "PYTHONPATH": str(self.root)}, stdout=subprocess.DEVNULL,
            stderr=open(self.log, "wb"), start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-4000:]
            try:
                if requests.get(f"{self.url}/hub/api/", verify=False, timeout=5).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the hub did not answer:\n{self.log.read_text()[-4000:]}")

    def __exit__(self, *exc) -> None:
        self.process.terminate()   # the hub stops the servers it started and its proxy
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def users(self) -> dict[str, dict]:
        answer = requests.get(f"{self.url}/hub/api/users", headers={"Authorization": f"token {self.token}"},
                              verify=False, timeout=30)
        answer.raise_for_status()
        return {user["name"]: user for user in answer.json()}


def _student_env(folder: Path) -> Path:
    """An environment every account can run (this one's interpreter is under root's home): the
    system Python's venv whose site-packages reach this checkout and this environment's packages.
    The hub's real students' environment is built by course_tools/hub/envs.py (tests/test_hub.py)."""
    from course_tools.hub.envs import base_python
    from course_tools.paths import ROOT

    env = folder / "student-env"
    subprocess.run([str(base_python()), "-m", "venv", "--without-pip", str(env)], check=True)
    site = next((env / "lib").glob("python3*/site-packages"))
    packages = Path(sysconfig.get_paths()["purelib"]).resolve()
    (site / "00-course.pth").write_text(f"{ROOT}\nimport site; site.addsitedir({str(packages)!r})\n")
    return env


def _course(folder: Path, platform, key: Path):
    """The course folder registered with the platform, its LMS roster synced."""
    from course_tools.course_dir import Course, init_course
    from course_tools.lms.roster import sync

    course = init_course(folder / "course", COURSE_ID, exchange=folder / "exchange")
    config = course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + platform.settings() + f'c.LMS.private_key_file = r"{key}"\n')
    course = Course(course.root)
    sync(course)   # `course lms roster`: ann becomes a student, tim is staff
    return course


def _etc(folder: Path, exchange: Path) -> Path:
    """The students' Jupyter configuration (the hub's etc/jupyter): the course's server extension on,
    nbgrader's course id and exchange."""
    etc = folder / "etc"
    etc.mkdir()
    (etc / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"course_student.lab_landing": True,
                                               "nbgrader.server_extensions.formgrader": False}}}))
    (etc / "nbgrader_config.py").write_text(f'c = get_config()\nc.CourseDirectory.course_id = "{COURSE_ID}"\n'
                                            f'c.Exchange.root = "{exchange}"\n')
    for path in (etc, *etc.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return etc


def _click_the_link(browser, platform, user: str):
    """A fresh browser context on the LMS's course page, the assignment's link clicked."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, ignore_https_errors=True)
    context.set_default_timeout(LAB_MS)
    page = context.new_page()
    page.goto(f"{platform.page_url}/launch?user={user}")
    page.click("#launch")
    return context, page


def test_a_student_clicks_the_link_in_the_lms_and_lands_in_jupyterlab_with_the_assignment(tmp_path):
    from playwright.sync_api import sync_playwright

    from course_tools.hub import accounts
    from course_tools.lms.launch_urls import launch_urls
    from lms_class import tool_key
    from lms_launch import LaunchingPlatform

    accounts.remove([ANN, TIM])   # leftovers of an interrupted run (only accounts the course's tools made)
    for name in (ANN, TIM):
        with pytest.raises(KeyError):
            pwd.getpwnam(name)
    folder = Path(tempfile.mkdtemp(prefix="lms-browser-"))
    folder.chmod(0o755)   # the students' servers read the exchange and etc/ below it
    try:
        (folder / "tool").mkdir(mode=0o700)
        key, jwk = tool_key(folder / "tool")
        port = free_port()
        urls = launch_urls(f"https://127.0.0.1:{port}")   # what `course lms config` prints for this hub
        platform = LaunchingPlatform(jwk, _members(), urls["login"], urls["redirect"], urls["target"])
        # the LMS's pages on http://localhost: another site than the hub's https://127.0.0.1
        platform.page_url = platform.url.replace("127.0.0.1", "localhost")
        with platform:
            course = _course(folder, platform, key)
            _release(folder / "exchange")
            hub = Hub(folder, port, course.root, _etc(folder, folder / "exchange"))
            with hub, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=[
                    *CHROMIUM_ARGS, "--ignore-certificate-errors", f"--enable-features={STRICT_SAMESITE}"])
                try:
                    _ann_lands_on_her_assignment_twice(browser, platform, hub)
                    _tim_is_a_grader_without_an_account(browser, platform, hub, course)
                finally:
                    browser.close()
    finally:
        removed = accounts.remove([ANN, TIM])
        if (folder / "state" / "jupyterhub.log").exists():   # the hub's and the servers' log, for a failure
            (tmp_path / "jupyterhub.log").write_bytes((folder / "state" / "jupyterhub.log").read_bytes())
        subprocess.run(["rm", "-rf", str(folder)], check=False)
        assert TIM not in removed


def _ann_lands_on_her_assignment_twice(browser, platform, hub: Hub) -> None:
    notebook_url = re.compile(rf"/user/{ANN}/lab/tree/{ASSIGNMENT}/{ASSIGNMENT}\.ipynb")
    platform.custom = {"assignment": ASSIGNMENT}
    try:
        context, page = _click_the_link(browser, platform, ANN)
        page.wait_for_url(notebook_url, timeout=LAB_MS)
        page.locator(".jp-NotebookPanel", has_text="01 forward ops (released)").wait_for(timeout=LAB_MS)
        account = pwd.getpwnam(ANN)
        fetched = Path(account.pw_dir) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert fetched.stat().st_uid == account.pw_uid   # fetched by her own server, as her
        assert os.stat(account.pw_dir).st_mode & 0o777 == 0o700
        from course_tools.hub import accounts

        assert accounts.ours(ANN)
        mine = fetched.parent / "my-work.txt"
        mine.write_text("kept")
        context.close()
        # The second launch: the same hub user and Unix account, her work kept (nothing fetched over it).
        context, page = _click_the_link(browser, platform, ANN)
        page.wait_for_url(notebook_url, timeout=LAB_MS)
        assert pwd.getpwnam(ANN).pw_uid == account.pw_uid and mine.read_text() == "kept"
        context.close()
        # A link naming something never released lands on the plain lab's page with a message.
        platform.custom = {"assignment": "../../etc/passwd"}
        context, page = _click_the_link(browser, platform, ANN)
        page.wait_for_url(re.compile(rf"/user/{ANN}/course/open\?unknown=1"), timeout=LAB_MS)
        assert "does not name an assignment this course has released" in page.locator(
            "#course-landing-message").text_content()
        context.close()
    finally:
        platform.custom = None
    users = hub.users()
    assert [name for name in users if name.startswith("lbx-")] == [ANN] and users[ANN]["groups"] == []


def _tim_is_a_grader_without_an_account(browser, platform, hub: Hub, course) -> None:
    context, page = _click_the_link(browser, platform, TIM)
    page.wait_for_url(re.compile(r"/hub/home"), timeout=60_000)
    context.close()
    assert hub.users()[TIM]["groups"] == [GRADERS]
    with pytest.raises(KeyError):
        pwd.getpwnam(TIM)
    with course.gradebook() as gradebook:
        assert [s.id for s in gradebook.students] == [ANN]
