"""Plain-text tables for the terminal (no dependency: students' terminals vary)."""
from __future__ import annotations

from .terminal import printable


def format_table(headers: list[str], rows: list[list], right: set[int] | None = None) -> str:
    """Columns padded to their widest cell; column indexes in ``right`` are right-aligned (numbers).
    Cells are made printable first (student ids and notes come from submissions), so that the
    columns line up with what the terminal shows."""
    right = right or set()
    cells = [[printable(h) for h in headers]] + [["" if v is None else printable(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row):
        return "  ".join(v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(row, widths))).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def points(score: float | None, max_score: float | None) -> str:
    if score is None:
        return "-"
    return f"{score:g} / {max_score:g}"


def late_text(seconds: float) -> str:
    """How late, for a table cell: "", "40 s late", "12 min late", "3.5 h late", "2.5 days late"."""
    if seconds <= 0:
        return ""
    if seconds < 3600:
        return f"{seconds / 60:.0f} min late" if seconds >= 60 else f"{seconds:.0f} s late"
    hours = seconds / 3600
    return f"{hours:.1f} h late" if hours < 48 else f"{hours / 24:.1f} days late"

