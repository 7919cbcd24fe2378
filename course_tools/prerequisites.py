"""What the machine must provide before `make demo` / `make test` start their long work.

    python3 -m course_tools.prerequisites demo    bubblewrap (grading), venv for .venv
    python3 -m course_tools.prerequisites test    that, PostgreSQL, and as root the hub test's pieces

Runs on the system Python before .venv exists, so it imports the standard library only (and
keeps to Python 3.6 syntax, so that an old interpreter gets the message, not a SyntaxError).
As root with apt-get it installs what is missing the way .ci/run does, saying so; otherwise it
stops within seconds, one line per missing piece with the command that installs it. The Debian
packages named here are the ones .ci/run installs (tests/test_prerequisites.py checks the two
agree). COURSE_SKIP_PREREQUISITES=1 skips the check (the tests that need a piece then skip or fail).
"""
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APT = "apt-get install -y"
CREATECLUSTER = "/etc/postgresql-common/createcluster.conf"


class Piece:
    """One thing the machine provides: ``present()`` says whether it is here; ``apt`` the Debian
    packages that provide it; ``install`` the command a person runs (shown when it is missing);
    ``before``/``after``: shell commands around the apt install (as .ci/run runs them)."""

    def __init__(self, name, why, present, apt=(), install="", before=(), after=()):
        self.name, self.why, self.present = name, why, present
        self.apt, self.before, self.after = tuple(apt), tuple(before), tuple(after)
        self.install = install or (f"sudo {APT} " + " ".join(self.apt))


def _imports(python, *modules):
    """Whether ``python`` (a path) can import ``modules`` (Debian splits venv/ensurepip off)."""
    if not python or not os.path.exists(python):
        return False
    code = "import " + ", ".join(modules)
    return subprocess.run([python, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def _postgres():
    return bool(shutil.which("initdb") or glob.glob("/usr/lib/postgresql/*/bin/initdb"))


def _venv_made():
    return os.path.exists(os.path.join(ROOT, ".venv", "bin", "python"))


PYTHON_VENV = Piece("python3-venv", "`make` creates .venv with `python3 -m venv`",
                    lambda: _venv_made() or _imports(sys.executable, "ensurepip", "venv"), apt=["python3-venv"])
BUBBLEWRAP = Piece("bubblewrap", "grading runs each submission in a bubblewrap sandbox (the `bwrap` command)",
                   lambda: shutil.which("bwrap") is not None, apt=["bubblewrap"])
POSTGRES = Piece("postgresql", "the gradebook tests on PostgreSQL start their own server (initdb)", _postgres,
                 apt=["postgresql-common", "postgresql"],
                 # The server package would create and start a "main" cluster: postgresql-common is told not to.
                 after=[f"sed -i 's/^#* *create_main_cluster *=.*/create_main_cluster = false/' {CREATECLUSTER}"])
CHROMIUM = Piece("chromium", "the hub test drives Debian's Chromium (Playwright never downloads one)",
                 lambda: os.access("/usr/bin/chromium", os.X_OK), apt=["chromium", "fonts-liberation"],
                 install=f"sudo {APT} --no-install-recommends chromium fonts-liberation")
NPM = Piece("npm", "the hub's proxy comes from npm", lambda: shutil.which("npm") is not None, apt=["nodejs", "npm"])
PROXY = Piece("configurable-http-proxy", "the hub test's proxy",
              lambda: shutil.which("configurable-http-proxy") is not None,
              install="sudo npm install -g configurable-http-proxy")
SYSTEM_VENV = Piece("python3-venv (system)", "the hub's users get environments made by /usr/bin/python3",
                    lambda: _imports("/usr/bin/python3", "ensurepip", "venv"), apt=["python3-venv"])

SLURM = Piece("slurm", "the Slurm test starts a single-node Slurm of its own (slurmctld, slurmd, munge)",
              lambda: shutil.which("slurmctld") is not None or os.access("/usr/sbin/slurmctld", os.X_OK),
              apt=["slurmctld", "slurmd", "slurm-client", "munge"],
              install=f"sudo {APT} --no-install-recommends slurmctld slurmd slurm-client munge")
NO_RECOMMENDS = (CHROMIUM, SLURM)


def pieces(target):
    """What ``target`` ("demo" or "test") needs on this machine, in the order to install it."""
    needed = [PYTHON_VENV, BUBBLEWRAP]
    if target == "test":
        needed.append(POSTGRES)
        if os.geteuid() == 0:  # the hub test needs root (real Unix accounts); without root it skips
            needed += [CHROMIUM, NPM, PROXY, SYSTEM_VENV, SLURM]   # Slurm too: its test runs as root
    return needed


def _can_install():
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def _install(piece, say):
    """Install ``piece`` as root (apt-get, or npm for the proxy); True when it is then present."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if piece is PROXY:
        commands = [["npm", "install", "-g", "--silent", "configurable-http-proxy"]] if shutil.which("npm") else []
    else:
        commands = [["apt-get", "update", "-qq"]]
        for package in piece.apt:
            commands.append(["apt-get", "install", "-y", "-qq"]
                            + (["--no-install-recommends"] if piece in NO_RECOMMENDS else []) + [package])
            if package == "postgresql-common":
                commands += [["sh", "-c", c] for c in piece.after]
    say(f"installing {piece.name} ({piece.why}): " + "; ".join(" ".join(c) for c in commands if c[0] != "sh"))
    for command in commands:
        if subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
            return False
    return piece.present()


def check(target, say=print):
    """The missing pieces of ``target`` after installing what can be installed here (root with
    apt-get); prints what it installs."""
    missing = [p for p in pieces(target) if not p.present()]
    if missing and _can_install():
        missing = [p for p in missing if not _install(p, say)]
    return missing


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in ("demo", "test"):
        print("usage: python3 -m course_tools.prerequisites demo|test", file=sys.stderr)
        return 2
    target = argv[0]
    if sys.version_info < (3, 10):
        print(f"make {target}: Python 3.10 or later is needed (this is {sys.version.split()[0]}): "
              f"install it, or run `make {target} PYTHON=python3.11`", file=sys.stderr)
        return 1
    if os.environ.get("COURSE_SKIP_PREREQUISITES"):
        print(f"make {target}: prerequisites not checked (COURSE_SKIP_PREREQUISITES is set)")
        return 0
    missing = check(target)
    if not missing:
        return 0
    print(f"make {target}: this machine lacks what it needs (nothing was installed or run):", file=sys.stderr)
    for piece in missing:
        print(f"  {piece.name}: {piece.why}; install it with: {piece.install}", file=sys.stderr)
    if target == "test":
        print("  (or run anyway, the tests that need them skipping: COURSE_SKIP_PREREQUISITES=1 make test)",
              file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
