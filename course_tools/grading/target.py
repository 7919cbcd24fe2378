"""What a submission is graded against: the release version its locked cells belong to.

    target_of(assignment, notebook, settings) -> Target     (raises release_versions.VersionError)

With a course folder in the settings that keeps release versions (course_tools/release_versions.py),
a submission is graded with its own version's release notebook (its locked cells, tasks and
points) and that version's student course_lib, by today's hidden suites for the tasks that
version has; ``settings.grade_on == "latest"`` grades it on the latest version instead (it must
still match a stored version: a notebook from elsewhere is never graded). Without stored
versions (no course folder, or an assignment released before versions were kept), the bundle's
own release in assignments/ is the target, as it always was.

    version_note(result, task_id) -> str    the feedback's line on which version was graded
    task_note(result, task_id) -> str       ... and on a task graded by checks kept for its contract
                                            (rewritten_note), or missing from the notebook (missing_note)

A task whose <task>_code cell a later release rewrote is graded by the hidden checks kept for the
version's contract when the suite has them (suite.task's ``contract``; the result's
``earlier_checks`` lists those tasks), else by today's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import release_versions, version_given
from .session.session import StudentError, read_notebook
from .settings import GradingSettings


LABEL = re.compile(r"v[0-9]{1,6}")


@dataclass(frozen=True)
class Target:
    release_notebook: Path | None = None   # None: the bundle's assignments/<id>/<id>.ipynb
    course_lib: Path | None = None         # None: that release's course_lib/
    # {"graded", "own", "latest", "policy"}, and when the student was given a later version than
    # their cells show, "given", "given_by" and "missing" (its tasks the notebook lacks); empty: no versions kept
    version: dict = field(default_factory=dict)


def target_of(assignment: str, notebook: Path, settings: GradingSettings) -> Target:
    """The target of the submitted ``notebook``; a notebook that cannot be read is the bundle's
    target (its grading then tells the student what is wrong with the file)."""
    if not settings.course_root:
        return Target()
    if not Path(settings.course_root).is_dir():  # a Dask worker, say: its scores would be the wrong release's
        raise release_versions.VersionError(f"the course folder {settings.course_root}, with the release versions "
                                            f"to grade against, is not on this machine")
    stored = release_versions.versions(Path(settings.course_root), assignment)
    if not stored:
        return Target()
    try:
        submitted = read_notebook(Path(notebook))
    except StudentError:
        return Target()
    known = version_given.given(Path(settings.course_root), assignment, settings.student, settings.submitted, stored)
    own = release_versions.match(stored, Path(notebook).name, submitted, known.version if known else None)
    graded = own
    if settings.grade_on == "latest":
        graded = stored[-1]
    elif known is not None and known.version.number > own.number:
        graded = known.version
    graded.verify()
    version_given.note(Path(settings.course_root), assignment, settings.student, settings.submitted, own)
    version = {"graded": graded.label, "own": own.label, "latest": stored[-1].label, "policy": settings.grade_on}
    if graded.label != own.label and settings.grade_on == "own":
        # What the version the student was given has and their notebook's does not.
        version.update(given=graded.label, given_by=known.by,
                       missing=sorted(set(graded.tasks(Path(notebook).name)) - set(own.tasks(Path(notebook).name))))
    claimed = release_versions.claimed_label(submitted)
    if claimed is not None and claimed != own.label:
        # The student wrote it: only a well-formed label is repeated back to them in the feedback.
        version["label_refused"] = claimed if LABEL.fullmatch(claimed) else "(not a release label)"
        if claimed in release_versions.fits(stored, Path(notebook).name, submitted):
            version["label_fits"] = True
    return Target(graded.notebook(Path(notebook).name), graded.course_lib, version)


def version_note(result: dict, task_id: str | None = None) -> str:
    """The lines above a task's feedback (nbgrader's and the service's) saying which release
    version was graded, when it is not the latest, and when ``task_id`` was graded by the checks
    kept for that version's contract of the task; empty when there is nothing to say."""
    version = result.get("version") or {}
    refused = ""
    if version.get("label_refused") and version.get("label_fits"):
        refused = (f"Your notebook's metadata says release {version['label_refused']}; its locked cells fit that "
                   f"release and {version['own']} alike, and a label never decides: graded as {version['own']}.\n")
    elif version.get("label_refused"):
        refused = (f"Your notebook's metadata says release {version['label_refused']}, but its locked cells are "
                   f"those of {version['own']}: the cells decide.\n")
    if version.get("given"):
        how = ("it was released before your first submission" if version.get("given_by") == "released"
               else "you submitted it before")
        note = (f"Graded against release {version['given']} of {result['assignment']}, the release you were given "
                f"({how}): your notebook's locked cells are those of the earlier {version['own']}, and a notebook "
                f"made to look like an earlier release is graded on the one you were given.\n")
        return refused + note + (task_note(result, task_id) if task_id is not None else "")
    if not version or version["graded"] == version["own"] == version["latest"]:
        return refused
    if version["graded"] != version["latest"]:
        note = (f"Graded against release {version['graded']} of {result['assignment']}, the one you worked on "
                f"(the latest is {version['latest']}): its tasks and points.\n")
    else:
        note = (f"Graded against the latest release {version['latest']} of {result['assignment']} (you worked on "
                f"{version['own']}), as your instructor chose.\n")
    return refused + note + (rewritten_note(result, task_id) if task_id is not None else "")


def task_note(result: dict, task_id: str) -> str:
    """The line of ``task_id``'s own feedback about release versions (the service's page puts it
    under the task): rewritten_note or missing_note; empty when there is nothing to say."""
    return rewritten_note(result, task_id) + missing_note(result, task_id)


def missing_note(result: dict, task_id: str) -> str:
    """A line when ``task_id`` is a task of the version the student was given whose cells their
    notebook lacks (it is graded without them); else empty."""
    version = result.get("version") or {}
    if task_id not in version.get("missing", ()):
        return ""
    return (f"{task_id} is a task of release {version['given']}, and its cells are missing from your notebook: "
            f"it is graded without them.\n")


def rewritten_note(result: dict, task_id: str) -> str:
    """A line when ``task_id`` was graded by the hidden checks kept for an earlier release's
    contract of the task (a later release rewrote its cell); else empty."""
    version = result.get("version") or {}
    if task_id not in result.get("earlier_checks", ()) or version.get("graded") == version.get("latest"):
        return ""
    return (f"A later release rewrote {task_id}: it is graded by the hidden checks of {task_id} as release "
            f"{version['graded']} asked for it.\n")
