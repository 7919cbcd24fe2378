"""Publishing a page through nbgrader's own feedback channel.

nbgrader's release_feedback puts a notebook's feedback into the exchange as
``<exchange>/<course>/feedback/<notebook_hash(secret, notebook id)>.html``, where the secret is
the ``submission_secret.txt`` nbgrader's submit wrote into that submission (and into the
student's own cache). fetch_feedback, the Assignments tab's "Fetch Feedback" and `course fetch ID
--feedback`, looks there with the secret of each submission the student made, so a page
published under a submission's name reaches exactly its student, for exactly that submission.
The folder is nbgrader's 0711: nobody can list it, and a name is a hash of a secret only that
student has.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import threading
from pathlib import Path

from nbgrader.utils import notebook_hash

from ..exchange_folders import check_course

SECRET = "submission_secret.txt"
LOCK_NAME = ".publishing.lock"   # in the feedback folder: the grader's, 0600; the folder is 0711


class Publishing:
    """Held by every publish, and by the service's pending pages across reading the queue and
    publishing: a worker's final page (a fast one: a receipt, a student's mistake) is never
    overwritten by a "waiting in the queue" page computed from a look at the queue taken before
    that row was closed, by this process or by another grading host of the course. So it is a
    thread lock in this process and, while this process holds it, ``flock`` on the feedback
    folder's lock file (several hosts: the shared storage must honour flock across hosts,
    docs/grading-service.md). Re-entrant: the pending pages publish while holding it."""

    def __init__(self) -> None:
        self._threads = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextlib.contextmanager
    def __call__(self, folder: Path):
        with self._threads:
            if self._depth == 0:
                ready(folder)
                fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    owner = folder.stat()
                    if os.geteuid() == 0 and os.fstat(fd).st_uid != owner.st_uid:
                        os.fchown(fd, owner.st_uid, owner.st_gid)   # root made it: the grader must open it too
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    fd, self._fd = self._fd, None
                    os.close(fd)   # releases the flock


PUBLISHING = Publishing()
# nbgrader writes secrets.token_hex(64); anything else was not written by nbgrader's submit.
_SECRET_FORM = re.compile(r"[0-9a-f]{32,256}")


def feedback_folder(exchange: Path, course_id: str) -> Path:
    return Path(exchange) / course_id / "feedback"


def feedback_names(submission: Path, notebooks: list[str]) -> dict[str, str]:
    """{notebook id: the file name nbgrader's fetch_feedback looks for}, for a submission copied
    by inbound.py into ``submission``; empty when it has no secret as nbgrader's submit writes it
    (such a submission can get no feedback before the deadline: its student could not fetch it)."""
    try:
        with open(submission / SECRET, "rb") as file:
            secret = file.read(300).decode("ascii", "replace")   # nbgrader's is 128 characters
    except OSError:
        return {}
    return feedback_names_of_secret(secret, notebooks)


def well_formed(secret: str) -> bool:
    """Whether ``secret`` is one nbgrader's submit writes (a file still being written is not)."""
    return bool(_SECRET_FORM.fullmatch(secret.strip()))


def feedback_names_of_secret(secret: str, notebooks: list[str]) -> dict[str, str]:
    """As feedback_names, from the secret's text; empty when it is not well formed."""
    secret = secret.strip()
    if not well_formed(secret):
        return {}
    return {notebook: f"{notebook_hash(secret=secret, notebook_id=notebook)}.html" for notebook in notebooks}


def ready(folder: Path) -> None:
    """Make the exchange's <exchange>/<course>/feedback ``folder`` if missing, as nbgrader's
    release_feedback makes it (0711), checked to be the grader's (exchange_folders.py) before and
    after."""
    check_course(folder.parent.parent, folder.parent.name, ("feedback",))
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o777 != 0o711 and folder.stat().st_uid == os.geteuid():
        folder.chmod(0o711)
    check_course(folder.parent.parent, folder.parent.name, ("feedback",))


def publish(folder: Path, name: str, page: str) -> Path:
    """Write ``page`` as ``folder/name`` in one step (a reader sees the old page or the new one),
    ``folder`` being the exchange's <exchange>/<course>/feedback, checked to be the grader's
    (exchange_folders.py) before and after it is made."""
    with PUBLISHING(folder):
        ready(folder)
        handle, scratch = tempfile.mkstemp(dir=folder, prefix=".publishing-", suffix=".html")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(page)
            os.chmod(scratch, 0o644)
            os.replace(scratch, folder / name)
        finally:
            if os.path.exists(scratch):
                os.unlink(scratch)
    return folder / name
