"""What `course check` found, and how it is printed: each visible check's result (TaskResult),
the notebook's (CheckReport), and the report a student reads (format_report: a table whose
"why" column puts the verdict first and wraps instead of cutting, then what to do next).

check.py runs the notebook and fills these in; commands.py and ``python -m course_student.check``
print them.
"""
from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from .words import plural

PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"


@dataclass
class TaskResult:
    """One visible check: its task id, its points, and how it went.

    status: "passed", "failed" or "not run"; message: one line saying why it did not pass (empty
    for a pass, unless the task's own code cell raised: a check can pass on course_lib's code).
    diagnosis: for a failed check, the known mistake the task's code looks like ({"name", "title",
    "explanation", "where"}; diagnose.py), or None.
    """
    task: str
    points: float
    status: str
    message: str = ""
    diagnosis: dict | None = None


@dataclass
class CheckReport:
    """The outcome of checking one notebook.

    tasks: the visible checks in notebook order. cell_errors: one line per other code cell that
    raised, e.g. "cell 12 (forward_matmul_code): NotImplementedError". Cells are numbered from 1
    in notebook order, markdown cells included. written_answers: the manually graded answers
    ("taylor_argument (4 points)"), which no check can score.
    """
    notebook: Path
    tasks: list[TaskResult]
    cell_errors: list[str]
    seconds: float
    written_answers: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # said before the table (e.g. a renamed notebook)

    @property
    def passed(self) -> bool:
        """Every visible check passed."""
        return bool(self.tasks) and all(t.status == PASSED for t in self.tasks)

    @property
    def points(self) -> float:
        return sum(t.points for t in self.tasks if t.status == PASSED)

    @property
    def total_points(self) -> float:
        return sum(t.points for t in self.tasks)


# The messages of course_lib/checks.py read "<what was checked>: <verdict>"; the table shows the
# verdict first, so that the part that explains is never the part a narrow column pushes out.
_VERDICT = re.compile(r": (?=wrong \w+:|got None\b|non-finite value|got an array of|raised \w+ as expected|"
                      r"expected \w+(?:, got|, but nothing))")
WIDTH = 100  # characters per line of the report


def verdict_first(message: str) -> str:
    """``message`` with its verdict first: "AssertionError: conv: dx: wrong shape: got (2, 6, 8, 2), ..."
    becomes "wrong shape: got (2, 6, 8, 2), ... (conv: dx)"; any other message is left as it is."""
    text = message.removeprefix("AssertionError: ")
    found = _VERDICT.search(text)
    if found is None:
        return message
    return f"{text[found.end():]} ({text[:found.start()]})"


def format_report(report: CheckReport) -> str:
    """The report as a table (task | points | result | why), a summary line, other cells' errors,
    what to do next, and a reminder that these are the visible checks only."""
    rows = [(t.task, f"{t.points:g}", t.status, verdict_first(t.message)) for t in report.tasks]
    header = ("task", "points", "result", "why")
    widths = [max(len(r[k]) for r in rows + [header]) for k in range(3)]
    indent = sum(widths) + 2 * 3
    why_width = max(40, WIDTH - indent)

    def lines(row):
        """The row, its "why" wrapped (never cut) into the column, continued under it."""
        wrapped = textwrap.wrap(row[3], width=why_width, break_on_hyphens=False) or [""]
        first = "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths)) + "  " + wrapped[0]
        return [first.rstrip()] + [" " * indent + more for more in wrapped[1:]]

    passed = sum(t.status == PASSED for t in report.tasks)
    out = [f"{report.notebook} ({report.seconds:.1f} s)"] + [f"note: {n}" for n in report.notes]
    out += ["", lines(header)[0], "  ".join("-" * w for w in widths) + "  ---"]
    out += [text for r in rows for text in lines(r)]
    out += ["", f"{passed} of {len(report.tasks)} checks pass "
                f"({report.points:g} / {plural(report.total_points, 'point')})"]
    if report.cell_errors:
        out += ["", "errors in other cells:"] + [f"  {e}" for e in report.cell_errors]
    for t in report.tasks:
        if t.diagnosis:
            d = t.diagnosis
            text = (f"\N{ELECTRIC LIGHT BULB} {t.task}: this looks like a known mistake: {d['title']}. "
                    f"{d['explanation']} (See {d['where']}.)")
            out += [""] + textwrap.wrap(text, width=WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    if not report.passed:
        out += ["", _hint(report)]
    if report.written_answers:
        out += ["", "graded by hand (not checked here): " + ", ".join(report.written_answers)]
    out += ["", "These are the visible checks only: the hidden tests that grade your submission are more "
                "thorough, so a pass here does not guarantee full marks."]
    return "\n".join(out)


def _hint(report: CheckReport) -> str:
    """What to do about the checks that did not pass."""
    failed = [t for t in report.tasks if t.status == FAILED]
    todo = [t.task for t in failed if "not implemented" in t.message]
    hints = []
    if todo:
        hints.append(f"Not implemented yet: {', '.join(todo)}. Write the code in each task's "
                     "`<task>_code` cell (marked YOUR CODE HERE) above its check.")
    wrong = [t.task for t in failed if t.task not in todo]
    if wrong:
        hints.append(f"Start with {wrong[0]}: read its message, fix the code in its `{wrong[0]}_code` cell, "
                     "then check again. A later check can fail because of an earlier task.")
    if any(t.status == NOT_RUN for t in report.tasks):
        hints.append("Some checks did not run: " + next(t.message for t in report.tasks if t.status == NOT_RUN) + ".")
    return "\n".join(hints)
