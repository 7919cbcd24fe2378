"""The types of a submitted notebook's cell metadata, checked where a submission is read.

A student can write any JSON into a cell's metadata (valid nbformat: nbformat's schema leaves
``metadata.nbgrader`` and ``metadata.course`` open). The grader reads these fields as nbgrader
and the release build write them, so a field of another type (a ``grade_id`` that is a list, an
``nbgrader`` entry that is a string) would make the reader fail with TypeError or
AttributeError: a crash of whatever read it (the grading service's intake, `course report`),
not a message to the student. ``problems`` names every such field; session.read_notebook turns
them into the student's error, so every reader of a submission sees either well-typed
metadata or a clear error naming the cell and the field.

    problems(nb) -> ["cell 4: metadata.nbgrader.grade_id is a list; nbgrader writes a string", ...]
"""
from __future__ import annotations

# What nbgrader (schema version 3) and the release build write, field by field.
_NUMBER = (int, float)
NBGRADER_FIELDS = {"grade_id": (str,), "grade": (bool,), "solution": (bool,), "locked": (bool,), "task": (bool,),
                   "points": _NUMBER, "schema_version": (int,), "checksum": (str,), "cell_type": (str,)}
COURSE_FIELDS = {"release_version": (str,), "demonstration": (bool,)}
_WORDS = {str: "a string", bool: "true or false", int: "a number", float: "a number"}


def _kind(value) -> str:
    return {list: "a list", dict: "an object", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, _NUMBER) else type(value).__name__)


def _fits(value, types: tuple) -> bool:
    if isinstance(value, bool):   # JSON true is a Python int too: a bool fits only where a bool is meant
        return bool in types
    return isinstance(value, types)


def _check_section(where: str, section, fields: dict) -> list[str]:
    if not isinstance(section, dict):
        return [f"{where} is {_kind(section)}; it must be an object of settings"]
    out = []
    for key, types in fields.items():
        if key in section and not _fits(section[key], types):
            out.append(f"{where}.{key} is {_kind(section[key])}; nbgrader writes {_WORDS[types[0]]}")
    return out


def problems(nb) -> list[str]:
    """Every metadata field of ``nb`` (a NotebookNode or its dict) whose type no release writes."""
    out = []
    meta = nb.get("metadata", {})
    if not isinstance(meta, dict):
        return ["the notebook's metadata is not an object"]
    if "course" in meta:
        out += _check_section("the notebook's metadata.course", meta["course"], COURSE_FIELDS)
    cells = nb.get("cells", [])
    if not isinstance(cells, list):
        return out + ["the notebook's cells are not a list"]
    for index, cell in enumerate(cells, 1):
        cell_meta = cell.get("metadata", {}) if isinstance(cell, dict) else None
        if not isinstance(cell_meta, dict):
            out.append(f"cell {index}: its metadata is not an object")
            continue
        for name, fields in (("nbgrader", NBGRADER_FIELDS), ("course", COURSE_FIELDS)):
            if name in cell_meta and cell_meta[name] is not None:
                out += _check_section(f"cell {index}: metadata.{name}", cell_meta[name], fields)
    return out
