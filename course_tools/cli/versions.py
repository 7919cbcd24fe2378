"""Release versions in the instructor's commands: what `course release` says before it replaces a
release students may hold, and which version each submission is (`course status`, `course report`).

nbgrader's exchange records no fetches, so who holds an earlier version is known only from what
was submitted (collected, or waiting in the exchange); anyone else may have fetched it too, which
is why a new version always asks for --force.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

from .. import release_versions
from ..course_dir import Course, CourseError
from ..release_changes import changes


def release_folder(course: Course, assignment: str) -> Path:
    """The folder nbgrader releases ``assignment`` from (the course's release_directory)."""
    return course.folder("release") / assignment


def version_of_submission(course: Course, assignment: str, student: str) -> str:
    """The release version of ``student``'s collected submission: its label, or why it has none."""
    stored = release_versions.versions(course.root, assignment)
    if not stored:
        return "-"
    folder = course.folder("submitted") / student / assignment
    labels = []
    for path in sorted(folder.glob("*.ipynb")):
        try:
            labels.append(release_versions.match(stored, path.name, nbformat.read(str(path), as_version=4)).label)
        except release_versions.VersionError:
            labels.append("matches none")
        except Exception:  # noqa: BLE001 - an unreadable notebook: its grading says why
            labels.append("unreadable")
    return ", ".join(labels) or "-"


def holders(course: Course, assignment: str, uncollected: list[str]) -> dict[str, str]:
    """student -> the version they submitted ("submitted, not collected" for the exchange's)."""
    found = {s: version_of_submission(course, assignment, s) for s in course.submitted_students(assignment)}
    found.update({s: "submitted, not collected yet" for s in uncollected if s not in found})
    return found


def adopt_unversioned_release(course: Course, assignment: str, say) -> None:
    """An assignment released before versions were kept: record what the exchange hands out now
    as v1 before a new release replaces it, so that its students' submissions still match a
    version (else each would be a grading error once a later version is recorded)."""
    outbound = course.exchange / course.course_id / "outbound" / assignment
    if release_versions.versions(course.root, assignment) or not any(outbound.glob("*.ipynb")):
        return
    try:
        adopted = release_versions.record(course.root, assignment, outbound)
    except (OSError, release_versions.VersionError) as err:
        say(f"warning: {assignment} was released before release versions were kept, and that release cannot be "
            f"recorded ({err}): submissions of it will be grading errors naming the reason")
        return
    say(f"{assignment} was released before release versions were kept: recorded the release in {outbound} as "
        f"{adopted.label}")


def check_new_version(course: Course, assignment: str, uncollected: list[str], force: bool, say) -> None:
    """Before anything is replaced: when the release differs from the latest stored version, say
    what changes and who submitted an earlier one; without ``force``, refuse (CourseError)."""
    adopt_unversioned_release(course, assignment, say)
    previous = release_versions.latest(course.root, assignment)
    folder = release_folder(course, assignment)
    try:
        candidate = release_versions.describe_release(folder)
    except release_versions.VersionError as err:
        raise CourseError(str(err)) from None
    if previous is None or previous.fingerprint == candidate["fingerprint"]:
        return
    number = previous.number + 1
    say(f"warning: releasing {assignment} again makes a new version, v{number}; {previous.label} was released "
        f"{previous.manifest['recorded']}. What changes for students who hold {previous.label}:")
    for line in changes(previous.folder, folder) or ["nothing in the names, tasks or points (the course_lib's code)"]:
        say(f"  {line}")
    held = holders(course, assignment, uncollected)
    if held:
        say(f"submitted an earlier version ({len(held)}):")
        for student, label in sorted(held.items()):
            say(f"  {student}: {label}")
    say(f"  nbgrader does not record fetches: anyone who fetched since {previous.manifest['recorded']} holds an "
        f"earlier version. Submissions are graded against the version they match, never below the one the "
        f"course knows their student was given: a student whose first submission comes after this release is "
        f"taken to hold v{number} (course grade {assignment} --version latest grades on the newest instead).")
    if not force:
        raise CourseError(f"not releasing v{number} of {assignment}: students may hold an earlier version (see "
                          f"above). Release it with `course release {assignment} --force` (or --yes)")


def mixed_versions_note(course: Course, assignment: str) -> str | None:
    """A line for `course report` when the collected submissions are of more than one version."""
    stored = release_versions.versions(course.root, assignment)
    if len(stored) < 2:
        return None
    counts: dict[str, int] = {}
    for student in course.submitted_students(assignment):
        label = version_of_submission(course, assignment, student)
        counts[label] = counts.get(label, 0) + 1
    if len(counts) < 2:
        return None
    listed = ", ".join(f"{n} of {label}" for label, n in sorted(counts.items()))
    return (f"mixed release versions: {listed} (latest {stored[-1].label}); each was graded against its own "
            f"version's tasks and points unless graded with --version latest")


def _total(result: dict | None) -> str:
    if not result or not result.get("tasks"):
        return "not graded" if not result else f"grading error: {str(result.get('grading_error'))[:60]}"
    tasks = result["tasks"].values()
    return f"{sum(t['score'] for t in tasks):g} / {sum(t['points'] for t in tasks):g}"


def latest_consequences(course: Course, assignment: str, jobs: list, store, own, latest) -> str:
    """A table: each submission's score on its own version and on the latest (from the result store)."""
    from ..grading.route import result_key
    from ..table import format_table

    rows = []
    for job in jobs:
        mine = store.get(assignment, result_key(assignment, job.notebook, job.settings(own)))
        newest = store.get(assignment, result_key(assignment, job.notebook, job.settings(latest)))
        label = version_of_submission(course, assignment, job.student)
        rows.append([job.student, job.notebook.name, label, _total(mine), _total(newest)])
    stored = release_versions.latest(course.root, assignment)
    head = ["student", "notebook", "version", "on its own version", f"on the latest ({stored.label if stored else '-'})"]
    return format_table(head, rows)
