"""The environment that nbgrader and notebook kernels run in."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

# Arguments for every kernel this bundle starts: its start-up warning that local TCP is unencrypted
# (ipykernel 7) is harmless here and would only alarm; the kernel's errors still show.
QUIET_KERNEL = ["--IPKernelApp.log_level=ERROR"]


def tool_env() -> dict:
    """The environment for nbgrader and kernels: this interpreter's scripts on PATH (nbgrader runs
    `alembic`). PYTHONPATH is dropped: it would shadow the student-facing course_lib that sits
    beside a release notebook (the kernel's working directory comes before site-packages, not
    before PYTHONPATH)."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    return env


@contextlib.contextmanager
def kernel_environment(**extra: str):
    """os.environ as a kernel started now should inherit it (tool_env plus ``extra``), restored after."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update({**tool_env(), **extra})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
