"""What a submission is graded against: the release version its locked cells belong to.

    target_of(assignment, notebook, settings) -> Target     (raises release_versions.VersionError)

With a course folder in the settings that keeps release versions (course_tools/release_versions.py),
a submission is graded with its own version's release notebook (its locked cells, tasks and
points) and that version's student course_lib, by today's hidden suites for the tasks that
version has; ``settings.grade_on == "latest"`` grades it on the latest version instead (it must
still match a stored version: a notebook from elsewhere is never graded). Without stored
versions (no course folder, or an assignment released before versions were kept), the bundle's
own release in assignments/ is the target, as it always was.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import release_versions
from .session import StudentError, read_notebook
from .settings import GradingSettings


@dataclass(frozen=True)
class Target:
    release_notebook: Path | None = None   # None: the bundle's assignments/<id>/<id>.ipynb
    course_lib: Path | None = None         # None: that release's course_lib/
    version: dict = field(default_factory=dict)  # {"graded", "own", "latest", "policy"}; empty: no versions kept


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
    own = release_versions.match(stored, Path(notebook).name, submitted)
    graded = stored[-1] if settings.grade_on == "latest" else own
    graded.verify()
    return Target(graded.notebook(Path(notebook).name), graded.course_lib,
                  {"graded": graded.label, "own": own.label, "latest": stored[-1].label, "policy": settings.grade_on})
