"""Doing what a refusal to start says: the chmod lines of course_tools/access.py's message.

A fresh clone is mode 0755, so the hub (and hub/jupyterhub_config.py) refuses to start from it
and names the chmod that closes it. The hub tests run that command as an instructor would, and
give the paths their modes back afterwards (a test leaves the developer's checkout as it was).
"""
from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Iterator

# Each fix is alone on its line, indented: "    chmod o-rwx /path/to/checkout".
FIX = re.compile(r"^ {4}(chmod [ugo]+-rwx (/\S*))$", re.MULTILINE)


def fixes(message: str) -> list[tuple[str, Path]]:
    """The (command, path) pairs a refusal names."""
    return [(command, Path(path)) for command, path in FIX.findall(message)]


@contextlib.contextmanager
def done_as_told(message: str) -> Iterator[list[tuple[str, Path]]]:
    """Run every chmod that ``message`` names; on leaving, put each path's mode back."""
    named = fixes(message)
    modes = {path: os.stat(path).st_mode & 0o7777 for _, path in named}
    try:
        for command, _ in named:
            subprocess.run(shlex.split(command), check=True)
        yield named
    finally:
        for path, mode in modes.items():
            os.chmod(path, mode)
