"""Release versions: what each `course release` handed out, kept so that a submission is graded
against the release its student fetched, not against whatever the assignment became later.

    <course>/release_versions/<assignment>/v1/    manifest.json, <assignment>.ipynb, course_lib/
    <course>/release_versions/<assignment>/v2/    ...

A version is a copy of the release folder (its notebooks and its student course_lib) and a
manifest with its fingerprint: a hash of what grading depends on, namely each notebook's locked
cells (grade id, source, nbgrader's checksum), its graded tasks with their points, and the
course_lib's files. Re-releasing an unchanged assignment records nothing new. A version's files
are read-only and are checked against the manifest whenever the version is used, so an edited
version is an error, never a silently different grading.

The released notebook carries its label (``metadata.course.release_version``), but a label is only
a claim and never decides: ``match`` finds the versions whose locked cells the submission has
(``VersionError`` when none), and among several that fit alike takes the one the course knows the
student was given (version_given.py), else the newest.

A task's contract (``task_contracts``) is what its solution cell hands the student to fill in, the
``<task>_code`` cell as released (its names, signatures, docstrings, given code; comment lines
and blank lines left out). When a later release rewrites that cell, today's hidden checks of the task
may no longer fit an earlier version's submissions: a hidden check marked with the earlier
contract's fingerprint (suite.task's ``contract`` and ``not_for``) grades those instead.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

FOLDER = "release_versions"
LABEL_KEY = "release_version"  # in the notebook's metadata["course"]


class VersionError(Exception):
    """A submission that cannot be tied to a stored version, or a stored version that is damaged."""


class NoMatchingRelease(VersionError):
    """The submitted notebook is none of the releases' (another name, another assignment, locked
    cells edited): the student's mistake, which the grading service tells them (service/mistakes.py)."""


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def locked_cells(nb) -> dict[str, str]:
    """grade id -> hash of (source, nbgrader checksum) of each locked cell of ``nb``."""
    return {_meta(c)["grade_id"]: _sha(json.dumps([c.get("source", ""), _meta(c).get("checksum")]))
            for c in nb.cells if _meta(c).get("locked") and _meta(c).get("grade_id")}


def graded_tasks(nb) -> dict[str, float]:
    """task id -> points of each autograded test cell of ``nb`` (suite.graded_tasks, from a node)."""
    return {_meta(c)["grade_id"]: float(_meta(c)["points"]) for c in nb.cells
            if _meta(c).get("grade") and not _meta(c).get("solution") and c.get("cell_type") == "code"}


def code_contract(source: str) -> str:
    """A fingerprint (12 hex digits) of Python ``source`` that ignores blank lines, lines that are
    only a comment and trailing spaces. Plain text on purpose: the fingerprint is written into
    hidden tests, and Python's tokenizer and AST dump differ between Python versions."""
    kept = [line.rstrip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#")]
    return _sha("\n".join(kept))[:12]


def task_contracts(nb) -> dict[str, str]:
    """task id -> the contract fingerprint of each graded task of ``nb`` that has a ``<task>_code``
    solution cell. Every graded task of this course has one, the tasks implemented in course_lib
    too (their cell holds exactly the library's region: tests/test_notebooks.py), and a task
    without one would have no contract (tests/test_release_versions.py fails then). What the cell
    fills in on the library's side (an Op's attributes, a helper it calls) is not in the contract:
    a submission runs on its own version's course_lib, so that side is the one it was written for."""
    code = {}
    for c in nb.cells:
        gid = _meta(c).get("grade_id")
        if c.get("cell_type") == "code" and _meta(c).get("solution") and gid and gid.endswith("_code"):
            code[gid[: -len("_code")]] = c.get("source", "")
    return {task: code_contract(code[task]) for task in graded_tasks(nb) if task in code}


def tree_hash(folder: Path) -> str:
    """A hash of every file under ``folder`` (relative paths and bytes; caches left out)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def describe_release(folder: Path) -> dict:
    """What grading depends on in the release folder ``folder`` (notebooks and course_lib/)."""
    notebooks = {}
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        notebooks[path.name] = {"locked": locked_cells(nb), "tasks": graded_tasks(nb)}
    if not notebooks:
        raise VersionError(f"{folder} holds no notebook to release")
    if not (folder / "course_lib" / "__init__.py").is_file():
        raise VersionError(f"{folder} has no student course_lib: run `course build {folder.name}`")
    described = {"notebooks": notebooks, "course_lib": tree_hash(folder / "course_lib")}
    described["fingerprint"] = _sha(json.dumps(described, sort_keys=True))[:16]
    return described


@dataclass(frozen=True)
class Version:
    """One stored release of an assignment."""
    assignment: str
    label: str          # "v1", "v2", ...
    folder: Path        # the copy of the release folder
    manifest: dict

    @property
    def number(self) -> int:
        return int(self.manifest["number"])

    @property
    def fingerprint(self) -> str:
        return self.manifest["fingerprint"]

    def notebook(self, name: str) -> Path:
        return self.folder / name

    @property
    def course_lib(self) -> Path:
        return self.folder / "course_lib"

    def tasks(self, name: str) -> dict[str, float]:
        return self.manifest["notebooks"][name]["tasks"]

    def verify(self) -> None:
        """Raise VersionError unless the stored files are still those the manifest describes."""
        try:
            now = describe_release(self.folder)
        except (OSError, ValueError, VersionError) as err:
            raise VersionError(f"the stored release {self.label} of {self.assignment} cannot be read ({err})") from None
        if now["fingerprint"] != self.fingerprint:
            raise VersionError(f"the stored release {self.label} of {self.assignment} in {self.folder} was changed "
                               f"after it was recorded (fingerprint {now['fingerprint']}, recorded {self.fingerprint}); "
                               f"restore it from a backup: versions are never edited")


def versions(course_root: Path, assignment: str) -> list[Version]:
    """The stored versions of ``assignment``, oldest first (none: released before versions were kept)."""
    base = Path(course_root) / FOLDER / assignment
    found = []
    for manifest in base.glob("v*/manifest.json") if base.is_dir() else []:
        try:
            data = json.loads(manifest.read_text())
        except (OSError, ValueError) as err:
            raise VersionError(f"{manifest} cannot be read ({err})") from None
        found.append(Version(assignment, manifest.parent.name, manifest.parent, data))
    return sorted(found, key=lambda v: v.number)


def latest(course_root: Path, assignment: str) -> Version | None:
    stored = versions(course_root, assignment)
    return stored[-1] if stored else None


def record(course_root: Path, assignment: str, release_folder: Path, now: datetime.datetime | None = None) -> Version:
    """Store the release in ``release_folder`` as the next version of ``assignment``, or return the
    latest version when it has the same fingerprint (an unchanged re-release). Going back to an
    older release's content records a new version: the latest is always what is released now."""
    described = describe_release(release_folder)
    stored = versions(course_root, assignment)
    if stored and stored[-1].fingerprint == described["fingerprint"]:
        return stored[-1]
    number = stored[-1].number + 1 if stored else 1
    label = f"v{number}"
    target = Path(course_root) / FOLDER / assignment / label
    scratch = target.with_name(f".{label}.writing")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    for path in release_folder.glob("*.ipynb"):
        shutil.copyfile(path, scratch / path.name)
    shutil.copytree(release_folder / "course_lib", scratch / "course_lib",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    when = (now or datetime.datetime.now(datetime.timezone.utc)).isoformat(timespec="seconds")
    manifest = {"assignment": assignment, "label": label, "number": number, "recorded": when, **described}
    (scratch / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    for folder, _, files in os.walk(scratch):  # read-only: a version is never edited
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
    os.rename(scratch, target)  # a half-written version is never seen
    return Version(assignment, label, target, manifest)


def label_notebooks(folder: Path, version: Version) -> list[str]:
    """Write the version's label into the metadata of the notebooks in ``folder`` (the outbound
    copy); returns what could not be labelled. Grading matches the cells, so an unlabelled
    notebook is still graded against its version."""
    problems = []
    for path in folder.glob("*.ipynb"):
        try:
            nb = nbformat.read(str(path), as_version=4)
            nb.metadata.setdefault("course", {})[LABEL_KEY] = version.label
            nbformat.write(nb, str(path))
        except OSError as err:
            problems.append(f"{path}: {err.strerror or err}")
    return problems


def claimed_label(nb) -> str | None:
    course = nb.get("metadata", {}).get("course", {})
    label = course.get(LABEL_KEY) if isinstance(course, dict) else None
    return label if isinstance(label, str) else None


def _differences(mine: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The locked cells in which a submission (``mine``) differs from a version's (``theirs``)."""
    out = [f"{gid} (edited)" for gid in sorted(theirs) if gid in mine and mine[gid] != theirs[gid]]
    out += [f"{gid} (missing)" for gid in sorted(theirs) if gid not in mine]
    out += [f"{gid} (not in that release)" for gid in sorted(mine) if gid not in theirs]
    return out


def match(stored: list[Version], notebook_name: str, nb, given: Version | None = None) -> Version:
    """The version ``nb`` (a submitted notebook named ``notebook_name``) belongs to: one whose
    locked cells it has exactly, whatever its label claims. When its cells fit several versions
    alike (releases that differ only in their course_lib), the one the course knows its student was
    given (``given``, version_given.py) if it is among them, else the newest of them: never the
    label, which is the student's to write. Raises VersionError naming why when it matches none."""
    assignment = stored[0].assignment
    mine = locked_cells(nb)
    candidates = [v for v in stored if notebook_name in v.manifest["notebooks"]]
    if not candidates:
        raise NoMatchingRelease(f"no release of {assignment} has a notebook named {notebook_name}")
    fits = [v for v in candidates if not _differences(mine, v.manifest["notebooks"][notebook_name]["locked"])]
    if not fits:
        closest = min(candidates, key=lambda v: len(_differences(mine, v.manifest["notebooks"][notebook_name]["locked"])))
        differ = _differences(mine, closest.manifest["notebooks"][notebook_name]["locked"])
        raise NoMatchingRelease(f"{notebook_name} matches no release of {assignment} "
                                f"({', '.join(v.label for v in candidates)}): its locked cells differ even from the "
                                f"closest, {closest.label}, in {', '.join(differ[:6])}"
                                f"{' and more' if len(differ) > 6 else ''}; a notebook from elsewhere, or locked "
                                f"cells edited")
    if given is not None and any(v.label == given.label for v in fits):
        return next(v for v in fits if v.label == given.label)
    return max(fits, key=lambda v: v.number)


def fits(stored: list[Version], notebook_name: str, nb) -> list[str]:
    """The labels of the versions whose locked cells ``nb`` has exactly (oldest first)."""
    mine = locked_cells(nb)
    return [v.label for v in stored if notebook_name in v.manifest["notebooks"]
            and not _differences(mine, v.manifest["notebooks"][notebook_name]["locked"])]
