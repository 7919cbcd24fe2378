"""JupyterHub configuration for one course with several graders (tested by tests/test_hub.py).

It follows nbgrader's own model for that case ("one class, multiple graders"):
  - students log in to their own Unix accounts and get their own servers, started by
    LocalProcessSpawner from the students' environment, which holds the student install only
    (`course student-package`: formgrader and create-assignment are off there);
  - the course's grading runs in a shared grader account, grader-<course id>, whose single-user
    server is a hub-managed service named after the course (/services/<course id>/), started
    from the graders' environment (the full bundle, PyTorch; formgrader on);
  - instructors and TAs are in the JupyterHub group formgrade-<course id>, whose role lets them
    reach that service and nothing of the students';
  - nbgrader's global config (course id, exchange root) is read by every server;
  - it refuses to start while a student could read hidden material (see below).

Where the deployment is comes from the environment (course_tools/hub sets it; a hub of its own
can set it in its service unit or edit the defaults below):
  COURSE_HUB_ROOT       the deployment (layout: course_tools/hub/layout.py)    default /srv/course-hub
  COURSE_ID             the nbgrader course id, the service's name               default dlsys
  COURSE_HUB_ROSTER     username,role per line (instructor | ta | student)       default hub/roster.csv
  COURSE_HUB_PASSWORD   the demo authenticator's shared password (required unless COURSE_HUB_LOGIN=lti)
  COURSE_HUB_LOGIN      password (the demo authenticator, default) | lti (launches from the LMS: the
                        course's c.LMS registration, course_tools/hub/lti_settings.py; docs/lms.md)
  COURSE_HUB_COURSE_DIR the course folder whose c.LMS is read          default ~grader-<course id>/<course id>
  COURSE_HUB_IP, COURSE_HUB_PORT                     where the proxy listens      127.0.0.1:8000
  COURSE_HUB_API_PORT, COURSE_HUB_PROXY_API_PORT, COURSE_HUB_SERVICE_PORT        8081, 8001, 9999
  COURSE_HUB_GRADING_PORT  the grading service's deadlines page (students' own deadlines)  9998

Not covered here (see the README): containers (DockerSpawner), Kubernetes (Zero to JupyterHub),
several courses on one hub.
"""
import csv
import os
import pwd
import sys
from pathlib import Path

c = get_config()  # noqa: F821

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("COURSE_HUB_ROOT", "/srv/course-hub"))
COURSE_ID = os.environ.get("COURSE_ID", "dlsys")
GRADER = f"grader-{COURSE_ID}"              # nbgrader's name for the shared grader account
FORMGRADE = f"formgrade-{COURSE_ID}"        # nbgrader's name for the graders' group
STUDENT_ENV, GRADER_ENV = ROOT / "student-env", ROOT / "grader-env"
ETC_JUPYTER, STATE = ROOT / "etc" / "jupyter", ROOT / "state"
SERVICE_PORT = int(os.environ.get("COURSE_HUB_SERVICE_PORT", "9999"))
GRADING = f"{COURSE_ID}-grading"            # the grading service (`course serve`), below
GRADING_PORT = int(os.environ.get("COURSE_HUB_GRADING_PORT", "9998"))
# What a student's `course fetch` / `course submit` and Assignments tab ask for their own deadline
# (course_tools/service/deadline_api.py), with their server's own hub token.
GRADING_URL = f"http://127.0.0.1:{GRADING_PORT}/services/{GRADING}/"
try:
    GRADER_HOME = Path(pwd.getpwnam(GRADER).pw_dir)
except KeyError:
    raise SystemExit(f"the grader account {GRADER} does not exist: create it (useradd --create-home {GRADER})")


def _roster(path):
    lines = [line for line in Path(path).read_text().splitlines() if line.strip() and not line.startswith("#")]
    return {row["username"].strip(): row["role"].strip() for row in csv.DictReader(lines)}


ROSTER = _roster(os.environ.get("COURSE_HUB_ROSTER", HERE / "roster.csv"))
GRADERS = sorted(name for name, role in ROSTER.items() if role in ("instructor", "ta"))
STUDENTS = sorted(name for name, role in ROSTER.items() if role == "student")

# ---------------------------------------------------------------------------- nothing hidden readable
# The hub does not start while a student's account could read or enter what holds hidden material:
# the checkout and environment it runs from, the deployment's bundle copy and graders' environment,
# the course folder and its gradebook (course_tools/access.py, the same check `make hub` makes).
try:
    from course_tools.access import account, exposures, refusal
except ImportError:  # a hub whose own environment lacks the course's tools: this checkout's
    sys.path.insert(0, str(HERE.parent))
    from course_tools.access import account, exposures, refusal
from course_tools.hub.layout import HubLayout  # noqa: E402

_EXPOSED = exposures(HubLayout(ROOT, COURSE_ID).hidden_material(), [account(name) for name in STUDENTS])
if _EXPOSED:
    raise SystemExit(refusal(_EXPOSED, "JupyterHub does not start"))

# ---------------------------------------------------------------------------- the hub and its proxy
c.JupyterHub.ip = os.environ.get("COURSE_HUB_IP", "127.0.0.1")
c.JupyterHub.port = int(os.environ.get("COURSE_HUB_PORT", "8000"))
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("COURSE_HUB_API_PORT", "8081"))
# configurable-http-proxy from npm (`npm install -g configurable-http-proxy`), started by the hub.
c.ConfigurableHTTPProxy.command = ["configurable-http-proxy"]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{os.environ.get('COURSE_HUB_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started
# No periodic health check of the services: JupyterHub 5's check_services_health raises an
# AttributeError when it runs while the hub stops (the course service's server record is already
# gone), and it waits on a dying service, which made a stop take a minute. It only logs; a managed
# service that exits is restarted by its own poll whatever this says.
c.JupyterHub.service_check_interval = 0

# ---------------------------------------------------------------------------- who logs in
# A shared password, so that a test (and `make hub`) can log in. A real course swaps in its
# institution's login: PAM (c.JupyterHub.authenticator_class = "pam", the Unix passwords of
# these same accounts), or OAuth/LTI (oauthenticator's GenericOAuthenticator, ltiauthenticator
# from the LMS), keeping allowed_users or mapping the LMS's roles to the groups below.
# COURSE_HUB_LOGIN=lti: students and staff arrive from the LMS by LTI 1.3 launches
# (jupyterhub-ltiauthenticator, configured from the course's c.LMS; course_tools/hub/lti_login.py):
# the account name is the roster's (`course lms roster`), the graders' group follows the LMS roles
# at each launch (the authenticator manages groups, so load_groups below is not set).
LOGIN = os.environ.get("COURSE_HUB_LOGIN", "password")
if LOGIN not in ("password", "lti"):
    raise SystemExit(f"COURSE_HUB_LOGIN={LOGIN!r}: write password (the demo's shared password) or lti")
if LOGIN == "lti":
    from course_tools.hub.lti_settings import configure as configure_lti

    try:
        configure_lti(c, Path(os.environ.get("COURSE_HUB_COURSE_DIR", GRADER_HOME / COURSE_ID)), FORMGRADE, STATE)
    except Exception as err:  # a CourseError naming the setting to write; the hub must not start without it
        raise SystemExit(f"the LTI login cannot be configured: {err}")
else:
    c.JupyterHub.authenticator_class = "dummy"
    if not os.environ.get("COURSE_HUB_PASSWORD"):
        raise SystemExit("set COURSE_HUB_PASSWORD: the demo authenticator's shared password (make hub sets one)")
    c.DummyAuthenticator.password = os.environ["COURSE_HUB_PASSWORD"]
    c.Authenticator.allowed_users = set(ROSTER)

# ---------------------------------------------------------------------------- the students' servers
# Each user's server runs as that Unix user in their own home (LocalProcessSpawner), from the
# students' environment only; nothing of the hub's own environment (PATH, PYTHONPATH) leaks in.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(STUDENT_ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.env_keep = ["LANG", "LC_ALL"]
c.Spawner.environment = {
    "PATH": f"{STUDENT_ENV / 'bin'}:/usr/bin:/bin",
    "VIRTUAL_ENV": str(STUDENT_ENV),
    "JUPYTER_CONFIG_PATH": str(ETC_JUPYTER),  # nbgrader's global config: course id and exchange
    "COURSE_GRADING_URL": GRADING_URL,        # the grading service's deadlines page (course_student/deadlines.py)
}
c.Spawner.start_timeout = 180  # JupyterLab starts slowly on a loaded 2-core machine
c.Spawner.http_timeout = 180

# ---------------------------------------------------------------------------- the graders
if LOGIN == "password":   # with LTI the authenticator puts graders in the group at each launch
    c.JupyterHub.load_groups = {FORMGRADE: {"users": GRADERS}}
c.JupyterHub.load_roles = [
    {
        # The graders reach the course's service (formgrader, its terminal) and can find it in
        # the hub's services list (nbgrader's course list asks for it).
        "name": FORMGRADE,
        "groups": [FORMGRADE],
        "scopes": [f"access:services!service={COURSE_ID}", "list:services", f"read:services!service={COURSE_ID}"],
    },
    {
        # Each server's token carries its owner's permissions, so a grader's own server can list
        # the course service too; a student's stays limited to the student.
        "name": "server",
        "scopes": ["inherit"],
    },
    {
        # Every user (JupyterHub's default role, plus one scope): their own server's token may ask
        # the grading service for their own deadlines, which is all that service answers a user.
        "name": "user",
        "scopes": ["self", f"access:services!service={GRADING}"],
    },
]

# The grader account's server, run by the hub as a service named after the course, from the
# graders' environment. Its working folder is the account's home, whose
# ~/.jupyter/nbgrader_config.py loads the course folder's configuration (course_tools/hub/deploy.py).
c.JupyterHub.services = [
    {
        "name": COURSE_ID,
        "url": f"http://127.0.0.1:{SERVICE_PORT}",
        "command": [str(GRADER_ENV / "bin" / "jupyterhub-singleuser")],
        "user": GRADER,
        "cwd": str(GRADER_HOME),
        "environment": {
            "JUPYTERHUB_DEFAULT_URL": "/lab",
            "PATH": f"{GRADER_ENV / 'bin'}:/usr/bin:/bin",
            "VIRTUAL_ENV": str(GRADER_ENV),
            "JUPYTER_CONFIG_PATH": str(ETC_JUPYTER),
            # `course release`, `course grade` ... in the service's terminal act on the course folder.
            "COURSE_DIR": str(GRADER_HOME / COURSE_ID),
        },
        "oauth_no_confirm": True,  # the graders' own course: no "authorize access" page
    },
]

# The grading service (`course serve`, course_tools/service/; the README's "Feedback before the
# deadline"): it grades each submission as it reaches the exchange and publishes its feedback for
# the students' Fetch Feedback. A hub-managed service in the grader account and environment like
# the course's server above (the same course folder, gradebook and sandbox). The hub starts it
# again when it exits; a restart loses nothing (its queue is in the gradebook's database). Its URL
# serves one page: the logged-in student's own deadlines (course_tools/service/deadline_api.py).
c.JupyterHub.services.append({
    "name": GRADING,
    "url": f"http://127.0.0.1:{GRADING_PORT}",
    "command": [str(GRADER_ENV / "bin" / "course"), "serve", "--course", str(GRADER_HOME / COURSE_ID)],
    "user": GRADER,
    "cwd": str(GRADER_HOME),
    "environment": {key: value for key, value in c.JupyterHub.services[0]["environment"].items()
                    if key != "JUPYTERHUB_DEFAULT_URL"},
})
