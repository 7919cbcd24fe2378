"""The release notebook a grading is checked against, parsed once per process for each version
of the file. One grading reads it for its key (results.py), its task list and contracts
(suite/run.py) and the program the worker runs (session/session.py); nbformat's parse and
schema check is most of what each read costs, and a fork-server child grades one notebook.
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import nbformat


def read_release(path: Path | str) -> nbformat.NotebookNode:
    """The notebook at ``path`` (nbformat 4). Each caller gets a copy of its own, free to change;
    a file rewritten since (a new build, a new release version) is parsed again."""
    path = Path(path).resolve()
    stat = path.stat()
    return copy.deepcopy(_parsed(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=16)
def _parsed(path: str, mtime_ns: int, size: int) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)
