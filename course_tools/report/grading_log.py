"""Who entered each hand-given grade: nbgrader's gradebook keeps the score, not the grader.

A Jupyter server extension (enabled in the graders' formgrader service, see hub/) records every
manual score and comment saved through formgrader, with the hub user who saved it, as one JSON
line in <course>/reports/grading-log.jsonl. `course report` reads it back.

    {"when": "...", "user": "ta1", "student": "ada", "assignment": "04_conv_backward",
     "task": "conv_derivation", "manual_score": 5.0}
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

LOG_NAME = "grading-log.jsonl"


def log_path(course_root: Path) -> Path:
    return Path(course_root) / "reports" / LOG_NAME


def append(course_root: Path, entry: dict) -> None:
    path = log_path(course_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), **entry}
    with open(path, "a") as out:
        out.write(json.dumps(entry) + "\n")


def read_log(course_root: Path, assignment: str) -> dict[tuple[str, str], str]:
    """(student, task) -> the user who last saved its manual grade."""
    out = {}
    try:
        lines = log_path(course_root).read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("assignment") == assignment and entry.get("user"):
            out[(entry.get("student"), entry.get("task"))] = entry["user"]
    return out


# ------------------------------------------------------------------------------ the server extension
def _jupyter_server_extension_points():
    return [{"module": "course_tools.report.grading_log"}]


def _load_jupyter_server_extension(server_app):
    """Wrap formgrader's grade handler: after a manual score is saved, log who saved it."""
    from nbgrader.api import Gradebook
    from nbgrader.server_extensions.formgrader import apihandlers

    original_put = apihandlers.GradeHandler.put

    def put(self, grade_id):
        outcome = original_put(self, grade_id)
        try:
            user = self.current_user
            name = user.get("name") if isinstance(user, dict) else getattr(user, "username", None) or str(user)
            with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gradebook:
                grade = gradebook.find_grade_by_id(grade_id)
                append(self.coursedir.root, {
                    "user": name, "student": grade.student.id, "assignment": grade.assignment.name,
                    "task": grade.name, "manual_score": grade.manual_score})
        except Exception as err:  # noqa: BLE001 - the grade is saved; the log is a courtesy
            server_app.log.warning("course grading log: %s", err)
        return outcome

    apihandlers.GradeHandler.put = put
    server_app.log.info("course grading log: recording who saves manual grades")
