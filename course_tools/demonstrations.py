"""Cells that only demonstrate, and are not run when a notebook is graded.

A source notebook may mark a locked cell (figures, demos, optional comparisons) with

    "metadata": {"course": {"demonstration": true}, "nbgrader": {..., "locked": true}}

Grading then skips it (session.program_cells): it shows the student something and computes
nothing graded. The feedback lists the cells it did not run. Only the release's own locked
cells can be skipped, so a student cannot mark their own code away; and the build checks that
skipping is safe (``problems``): no later cell that is run, and no hidden check, reads a name
that only a demonstration cell defines.
"""
from __future__ import annotations

import ast
import re
import symtable


def is_demonstration(cell) -> bool:
    meta = cell.get("metadata", {})
    return bool((meta.get("course") or {}).get("demonstration")) and bool((meta.get("nbgrader") or {}).get("locked"))


def _parse(source: str) -> str | None:
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    text = "\n".join(lines)
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text


def _bound(text: str) -> set[str]:
    """Names a cell binds at module level (assignments, imports, defs, classes)."""
    table = symtable.symtable(text, "<cell>", "exec")
    return {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}


def _read(text: str) -> set[str]:
    """Module-level names a cell reads: at the top level, or as globals inside its functions."""
    names, stack = set(), [symtable.symtable(text, "<cell>", "exec")]
    top = True
    while stack:
        table = stack.pop()
        for symbol in table.get_symbols():
            if (top and symbol.is_referenced()) or (not top and symbol.is_global() and symbol.is_referenced()):
                names.add(symbol.get_name())
        stack.extend(table.get_children())
        top = False
    return names


# How hidden suites read a notebook's variables (student.variable("name") and its helpers).
_SUITE_READS = re.compile(r"""(?:variable|worked_answer|_variable|_results|_sweep|_best)\((?:student,\s*)?["']([A-Za-z_]\w*)["']""")


def problems(nb, hidden_suite_text: str = "") -> list[str]:
    """Why skipping the notebook's demonstration cells would change what is graded (empty: safe)."""
    found, demo_only = [], {}
    suite_reads = set(_SUITE_READS.findall(hidden_suite_text))
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        name = (cell.get("metadata", {}).get("nbgrader") or {}).get("grade_id") or "an unnamed cell"
        text = _parse(cell.source)
        if text is None:
            if is_demonstration(cell):
                found.append(f"demonstration cell {name} does not parse")
            continue
        if is_demonstration(cell):
            bound = _bound(text)
            for variable in bound:
                demo_only.setdefault(variable, name)
            if bound & suite_reads:
                found.append(f"demonstration cell {name} defines {', '.join(sorted(bound & suite_reads))}, which "
                             f"the hidden suite reads")
            continue
        meta = cell.get("metadata", {}).get("nbgrader") or {}
        if meta.get("grade") and not meta.get("solution"):
            continue  # a visible test cell: grading never runs it
        for variable in sorted((_read(text) - _bound(text)) & set(demo_only)):
            found.append(f"{name} reads {variable}, which only the demonstration cell {demo_only[variable]} defines")
        for variable in _bound(text):
            demo_only.pop(variable, None)
    return found
