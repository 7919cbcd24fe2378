"""The release version a Dask task carries, for a worker that cannot see the course folder.

    carried(assignment, notebook, settings) -> dict   on the grader, which sees the course folder
    unpacked(carried, folder) -> Target               on the worker: written under ``folder``, checked

The grader decides what a submission is graded against (target.py: the stored version its
locked cells match, never below the one its student was given) and the task carries the
answer as data, so a worker needs the course's commit installed but not its course folder:

    {"version": {...}, "release": None}
        the bundle's own release (no versions kept): every worker has it, the bundle being
        checked by fingerprint (on_dask.grade_text)
    {"version": {...}, "release": {"assignment", "label", "notebook", "fingerprint", "digest",
                                   "files": {relative path: bytes}}}
        the stored version's notebooks (its locked cells, tasks and points) and its student
        course_lib (about 300 KB); the hidden suites are the bundle's, as on the grader.
        "fingerprint": the one its manifest recorded at `course release`
        (release_versions.describe_release); "digest": a hash of every file sent.

``version`` is target.Target.version (which version is graded, the student's own, the latest:
the feedback's lines). The worker writes the files into a scratch folder of its own and grades
only when both hold: the digest of what arrived, and the fingerprint describe_release gives of
what it wrote. Otherwise it refuses (ShippedVersionError, naming which): a version damaged on
the way, or a stored version edited after it was recorded, is never graded.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath

from ... import release_versions
from ..settings import GradingSettings
from ..target import Target, target_of

COURSE_LIB = "course_lib"


class ShippedVersionError(RuntimeError):
    """The release version a task carried is not the one the grader recorded: not graded."""


def files_digest(files: dict[str, bytes]) -> str:
    """The hash of a version's files as a task carries them (relative path -> bytes)."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name] + b"\0")
    return digest.hexdigest()


def _files(folder: Path) -> dict[str, bytes]:
    """relative path -> bytes of the version folder's notebooks and course_lib (caches left out)."""
    files = {path.name: path.read_bytes() for path in sorted(folder.glob("*.ipynb"))}
    for path in sorted((folder / COURSE_LIB).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            files[path.relative_to(folder).as_posix()] = path.read_bytes()
    return files


def carried(assignment: str, notebook: Path, settings: GradingSettings) -> dict:
    """What a task grading ``notebook`` carries (module docstring). Raises
    release_versions.VersionError when the notebook matches no stored version (target.py)."""
    target = target_of(assignment, Path(notebook), settings)
    if target.release_notebook is None:
        return {"version": target.version, "release": None}
    folder = target.release_notebook.parent
    recorded = json.loads((folder / "manifest.json").read_text())   # target_of verified the folder against it
    files = _files(folder)
    return {"version": target.version,
            "release": {"assignment": assignment, "label": recorded["label"], "notebook": target.release_notebook.name,
                        "fingerprint": recorded["fingerprint"], "digest": files_digest(files), "files": files}}


def _safe(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    top_notebook = len(path.parts) == 1 and path.suffix == ".ipynb"
    in_lib = len(path.parts) > 1 and path.parts[0] == COURSE_LIB
    if path.is_absolute() or ".." in path.parts or not (top_notebook or in_lib):
        raise ShippedVersionError(f"the release version sent with this task names a file {name!r} outside a "
                                  f"release's notebooks and course_lib: not graded")
    return path


def unpacked(shipped: dict, folder: Path) -> Target:
    """The Target a task's ``shipped`` version (``carried``'s value) describes, its files written
    under ``folder`` (an empty scratch folder of the worker's); ShippedVersionError when what
    arrived is not the recorded version."""
    release = shipped.get("release")
    if release is None:
        return Target(version=dict(shipped.get("version") or {}))
    what = f"release {release['label']} of {release['assignment']}"
    files = release["files"]
    if files_digest(files) != release["digest"]:
        raise ShippedVersionError(f"the {what} sent with this task arrived changed (its files' digest differs "
                                  f"from the grader's): not graded")
    paths = {name: Path(folder) / _safe(name) for name in files}   # every name checked before any is written
    for name, path in paths.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])
    try:
        described = release_versions.describe_release(Path(folder))
    except (OSError, ValueError, release_versions.VersionError) as err:
        raise ShippedVersionError(f"the {what} sent with this task cannot be read ({err}): not graded") from None
    if described["fingerprint"] != release["fingerprint"]:
        raise ShippedVersionError(f"the {what} sent with this task is not the one recorded at `course release` "
                                  f"(fingerprint {described['fingerprint']}, recorded {release['fingerprint']}): "
                                  f"not graded")
    notebook = Path(folder) / _safe(release["notebook"])
    return Target(notebook, Path(folder) / COURSE_LIB, dict(shipped.get("version") or {}))
