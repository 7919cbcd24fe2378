"""Solution regions in course_lib's source:

    ### BEGIN SOLUTION <task id>
    ...reference code...
    ### END SOLUTION <task id>
    ### FALLBACK <task id>: <one statement>        (optional)

A fallback stands in for the region in releases of assignments that come *before* the task's
own: it does the same job through the array library (NumPy/CuPy) without showing the
solution, so earlier assignments can run on pieces their students have not written yet (the
forward ops of 01 need NDArray views that students build in 03).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

BEGIN = re.compile(r"^(?P<indent>[ \t]*)### BEGIN SOLUTION (?P<task>[A-Za-z0-9_]+)[ \t]*$")
END = re.compile(r"^[ \t]*### END SOLUTION (?P<task>[A-Za-z0-9_]+)[ \t]*$")
FALLBACK = re.compile(r"^[ \t]*### FALLBACK (?P<task>[A-Za-z0-9_]+): (?P<code>.+)$")


class RegionError(ValueError):
    pass


@dataclass(frozen=True)
class Region:
    task: str
    begin: int  # 0-based line index of the BEGIN marker
    end: int    # 0-based line index of the END marker
    indent: str
    body: str   # the lines between the markers, dedented by ``indent``
    fallback: str | None = None  # the FALLBACK statement right after the END marker, if any
    last: int = -1  # 0-based index of the region's last line (END, or FALLBACK when present)


def find_regions(text: str, where: str = "<text>") -> list[Region]:
    """Every region of ``text``; RegionError naming ``where`` and the line if markers do not pair."""
    regions, open_at = [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        begin, end = BEGIN.match(line), END.match(line)
        marker = line.lstrip().startswith(("### BEGIN SOLUTION", "### END SOLUTION"))
        if marker and not (begin or end):
            raise RegionError(f"{where}:{i + 1}: malformed solution marker (needs a task id): {line.strip()!r}")
        if begin:
            if open_at is not None:
                raise RegionError(f"{where}:{i + 1}: BEGIN SOLUTION {begin['task']} inside the region opened "
                                  f"at line {open_at[0] + 1}")
            open_at = (i, begin)
        elif end:
            if open_at is None or open_at[1]["task"] != end["task"]:
                raise RegionError(f"{where}:{i + 1}: END SOLUTION {end['task']} without a matching BEGIN")
            start, match = open_at
            indent = match["indent"]
            body = "\n".join(l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[start + 1:i])
            following = FALLBACK.match(lines[i + 1]) if i + 1 < len(lines) else None
            if following and following["task"] != end["task"]:
                raise RegionError(f"{where}:{i + 2}: FALLBACK {following['task']} after the region of {end['task']}")
            fallback = following["code"].strip() if following else None
            regions.append(Region(match["task"], start, i, indent, body, fallback, i + 1 if following else i))
            open_at = None
        elif FALLBACK.match(line) and not (i > 0 and END.match(lines[i - 1])):
            raise RegionError(f"{where}:{i + 1}: FALLBACK must directly follow its END SOLUTION line")
    if open_at is not None:
        raise RegionError(f"{where}:{open_at[0] + 1}: BEGIN SOLUTION {open_at[1]['task']} is never closed")
    return regions


def stub_line(task: str, assignment: str) -> str:
    return (f'raise NotImplementedError("{task}: not implemented yet; you write it in assignment '
            f'{assignment}")')


def strip_regions(text: str, strip: set[str], assignment_of, where: str = "<text>",
                  use_fallback: set[str] = frozenset()) -> str:
    """Replace each region whose task is in ``strip``: by its fallback if the task is in
    ``use_fallback`` and has one, else by a stub that raises NotImplementedError. Keep the code
    of every other region. Markers and fallback lines never survive."""
    lines = text.splitlines()
    out, last = [], 0
    for region in find_regions(text, where):
        out.extend(lines[last:region.begin])
        if region.task in strip and region.task in use_fallback and region.fallback:
            out.append(region.indent + region.fallback)
        elif region.task in strip:
            out.append(region.indent + stub_line(region.task, assignment_of(region.task)))
        else:
            out.extend(lines[region.begin + 1:region.end])
        last = region.last + 1
    out.extend(lines[last:])
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


NB_BEGIN = re.compile(r"^(?P<indent>[ \t]*)### BEGIN SOLUTION[ \t]*$")
NB_END = re.compile(r"^[ \t]*### END SOLUTION[ \t]*$")


def notebook_region_spans(source: str, where: str = "<cell>") -> list[tuple[int, int, str]]:
    """(BEGIN line, END line, indent), 0-based, of each region between nbgrader's plain
    ``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers of one notebook cell, in order."""
    spans, lines, start = [], source.splitlines(), None
    for i, line in enumerate(lines):
        if NB_BEGIN.match(line):
            if start is not None:
                raise RegionError(f"{where}: nested BEGIN SOLUTION at line {i + 1}")
            start, indent = i, NB_BEGIN.match(line)["indent"]
        elif NB_END.match(line):
            if start is None:
                raise RegionError(f"{where}: END SOLUTION without BEGIN at line {i + 1}")
            spans.append((start, i, indent))
            start = None
    if start is not None:
        raise RegionError(f"{where}: BEGIN SOLUTION at line {start + 1} is never closed")
    return spans


def notebook_region_bodies(source: str, where: str = "<cell>") -> list[str]:
    """The dedented code of each region of one notebook cell (notebook_region_spans), in order."""
    lines = source.splitlines()
    return ["\n".join(l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[start + 1:end])
            for start, end, indent in notebook_region_spans(source, where)]


def library_regions() -> dict[str, list[Region]]:
    """Every region of course_lib, by task id, in file order."""
    from .paths import LIBRARY as root

    by_task: dict[str, list[Region]] = {}
    for path in sorted(root.rglob("*.py")):
        for region in find_regions(path.read_text(), where=str(path.relative_to(root.parent))):
            by_task.setdefault(region.task, []).append(region)
    return by_task
