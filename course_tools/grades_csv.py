"""grades.csv as nbgrader writes it, with its scores rounded as formgrader shows them.

nbgrader's CSV export writes each score as Python prints the float, so a sum of task scores
comes out as 25.647100000000002 where formgrader shows 25.65. This plugin (nbgrader_config.py's
ExportApp.plugin_class, so `nbgrader export` and `course export` both use it) lets nbgrader
write the file and then rounds the score columns to formgrader's two decimals, and adds the
column ``student_duedate`` beside nbgrader's ``duedate`` (the assignment's): the student's own
deadline, an extension included, as the late penalty of the same row counted it (`course grade`
puts each extension into the gradebook: deadlines.apply_to_gradebook). nbgrader writes a name that
holds a comma ("Ñúñez, Jr.", as an LMS roster brings them) unquoted, shifting that row's columns:
such a row is put back in its columns and written quoted.
"""
from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin

SCORE_COLUMNS = ("raw_score", "late_submission_penalty", "score", "max_score")
OWN_DEADLINE = "student_duedate"   # after nbgrader's "duedate"
DECIMALS = 2  # as formgrader and the feedback show scores


def rounded(text: str) -> str:
    """A score as formgrader shows it ("25.647100000000002" -> "25.65"); anything else unchanged."""
    try:
        return repr(round(float(text), DECIMALS))
    except ValueError:
        return text


NAME_COLUMNS = ("last_name", "first_name", "email")   # nbgrader writes them unquoted, between student_id and the scores


def _realigned(raw: list[str], header: list[str], names: dict[str, tuple[str, str, str]]) -> dict | None:
    """A row nbgrader wrote with a comma in a name (so more cells than the header), put back in its
    columns: the cells before the names and the scores after them are where they were, the names
    come from the gradebook (``names``: {student id: (last, first, email)}). None if it cannot."""
    if not all(c in header for c in ("student_id", *NAME_COLUMNS)):
        return None
    first, after = header.index(NAME_COLUMNS[0]), len(header) - header.index(NAME_COLUMNS[-1]) - 1
    row = dict(zip(header[:first], raw[:first]))
    if row.get("student_id") not in names or len(raw) < len(header):
        return None
    row.update(zip(NAME_COLUMNS, names[row["student_id"]]))
    row.update(zip(header[len(header) - after:], raw[len(raw) - after:]))
    return row


def round_scores(path: Path, own_deadlines: dict[tuple[str, str], str] | None = None,
                 names: dict[str, tuple[str, str, str]] | None = None) -> bool:
    """Rewrite the CSV at ``path`` with its SCORE_COLUMNS rounded (the other columns as they are)
    and, with ``own_deadlines`` ({(assignment, student): deadline}, for the students with an
    extension), the column OWN_DEADLINE after "duedate" (the assignment's where no extension).
    A file whose rows do not line up with its header (nbgrader does not quote a name holding a
    comma) is left as it is: rounding would change the wrong columns; unless ``names`` gives the
    gradebook's names (RoundedCsvExport does), which are then written back quoted. Returns whether
    it rounded."""
    with open(path, newline="") as handle:
        raw = list(csv.reader(handle))
    header = raw[0] if raw else []
    rows = []
    for cells in raw[1:]:
        row = dict(zip(header, cells)) if len(cells) == len(header) else _realigned(cells, header, names or {})
        if row is None:
            return False
        rows.append(row)
    for row in rows:
        for column in SCORE_COLUMNS:
            if row.get(column):
                row[column] = rounded(row[column])
    if own_deadlines is not None and "duedate" in header and OWN_DEADLINE not in header:
        header.insert(header.index("duedate") + 1, OWN_DEADLINE)
        for row in rows:
            row[OWN_DEADLINE] = own_deadlines.get((row.get("assignment"), row.get("student_id")), row["duedate"])
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return True


def export_rows(gradebook, assignments: list[str] | None = None) -> list[dict[str, str]]:
    """The rows `course export` writes to grades.csv (this module's plugin, into a scratch file),
    as dicts by column: what the LMS push and the Canvas and Moodle files send, computed once."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="course-export-") as scratch:
        dest = Path(scratch) / "grades.csv"
        RoundedCsvExport(to=str(dest), assignment=list(assignments or [])).export(gradebook)
        with open(dest, newline="") as handle:
            rows = list(csv.DictReader(handle))
    broken = [row.get("student_id") for row in rows if None in row or None in row.values()]
    if broken:
        raise ValueError(f"grades.csv's rows of {', '.join(map(str, broken))} do not match its header: its scores "
                         f"cannot be read")
    return rows


class RoundedCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, its scores rounded to formgrader's two decimals."""

    def export(self, gradebook) -> None:
        super().export(gradebook)
        dest = Path(self.to or "grades.csv")  # nbgrader's own default name when --to is not given
        names = {s.id: (s.last_name or "", s.first_name or "", s.email or "") for s in gradebook.students}
        if not round_scores(dest, _own_deadlines(gradebook), names):
            self.log.warning("%s: a row does not match the header (a comma in a name?); scores left unrounded", dest)


def _own_deadlines(gradebook) -> dict[tuple[str, str], str]:
    """{(assignment, student): the submission's deadline} where the gradebook holds an extension,
    written as nbgrader writes "duedate" (str of the naive UTC datetime)."""
    from nbgrader.api import Assignment, SubmittedAssignment

    rows = (gradebook.db.query(SubmittedAssignment).join(Assignment)
            .filter(SubmittedAssignment.extension.isnot(None)).all())
    return {(row.assignment.name, row.student.id): str(row.duedate) for row in rows if row.duedate is not None}
