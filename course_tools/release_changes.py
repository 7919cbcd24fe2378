"""What a new release of an assignment changes for students who hold an earlier one.

    changes(old_folder, new_folder) -> list of lines

Both folders are release folders (a stored version's, release_versions.py, or assignments/<id>/):
their notebooks and student course_lib. The lines name what the earlier release provided that
the new one no longer does (course_lib names removed or renamed, such as a setup helper the
earlier notebook imports), tasks added or removed, points changed, and tasks whose code cell was
rewritten (a new contract, release_versions.task_contracts), with whether the hidden suite keeps
checks for the earlier contract or today's checks will grade the earlier release's submissions.
"""
from __future__ import annotations

import ast
from pathlib import Path

import nbformat

from course_student.words import plural

from .paths import SUITES
from .release_versions import describe_release, task_contracts



def top_level_names(course_lib: Path) -> dict[str, set[str]]:
    """module path (relative to course_lib/) -> the names its top level defines."""
    found = {}
    for path in sorted(course_lib.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        names = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
        found[path.relative_to(course_lib).as_posix()] = names
    return found


def _cells_using(folder: Path, name: str) -> list[str]:
    """The grade ids (or positions) of the cells of ``folder``'s notebooks whose code mentions ``name``."""
    out = []
    for path in sorted(folder.glob("*.ipynb")):
        for index, cell in enumerate(nbformat.read(str(path), as_version=4).cells):
            if cell.cell_type == "code" and name in cell.source:
                out.append(cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index + 1}")
    return out


def _rewritten(old_nb: Path, new_nb: Path) -> list[str]:
    """One line per task of both notebooks whose <task>_code cell has another contract in the new."""
    before = task_contracts(nbformat.read(str(old_nb), as_version=4))
    after = task_contracts(nbformat.read(str(new_nb), as_version=4))
    suite = "".join(p.read_text(errors="replace") for p in sorted((SUITES / new_nb.stem).glob("*.py")))
    lines = []
    for task in sorted(t for t in before if t in after and before[t] != after[t]):
        line = f"rewritten: {task}_code (contract {before[task]} -> {after[task]})"
        if before[task] in suite:
            line += (f"; the hidden suite names {before[task]}: the checks it marks for that contract grade the "
                     f"earlier release's submissions")
        else:
            line += (f"; no hidden check names {before[task]}, so today's checks grade the earlier release's "
                     f"submissions: if they no longer fit, keep the earlier checks with "
                     f"@task({task!r}, contract={before[task]!r})")
        lines.append(line)
    return lines


def changes(old_folder: Path, new_folder: Path) -> list[str]:
    """One line per change that matters to a student holding the release in ``old_folder``."""
    lines = []
    old_names, new_names = top_level_names(old_folder / "course_lib"), top_level_names(new_folder / "course_lib")
    for module, names in old_names.items():
        added = sorted(new_names.get(module, set()) - names)
        for name in sorted(names - new_names.get(module, set())):
            where = f"course_lib/{module}"
            if module not in new_names:
                line = f"removed: {name} ({where} is gone)"
            else:
                line = f"removed or renamed: {name} in {where}" + (f" (new there: {', '.join(added)})" if added else "")
            users = _cells_using(old_folder, name)
            if users:
                line += f"; the earlier notebook uses it in {', '.join(users[:5])}"
            lines.append(line)
    old, new = describe_release(old_folder)["notebooks"], describe_release(new_folder)["notebooks"]
    for name in sorted(set(old) | set(new)):
        if name not in new:
            lines.append(f"notebook removed: {name}")
            continue
        if name not in old:
            lines.append(f"notebook added: {name}")
            continue
        before, after = old[name]["tasks"], new[name]["tasks"]
        lines += [f"task added: {t} ({plural(after[t], 'point')})" for t in after if t not in before]
        lines += [f"task removed: {t} ({plural(before[t], 'point')})" for t in before if t not in after]
        lines += [f"points changed: {t} {before[t]:g} -> {after[t]:g}" for t in before
                  if t in after and before[t] != after[t]]
        lines += _rewritten(old_folder / name, new_folder / name)
        edited = sorted(g for g in old[name]["locked"] if g in new[name]["locked"]
                        and old[name]["locked"][g] != new[name]["locked"][g])
        if edited:
            lines.append(f"locked cells changed: {', '.join(edited[:8])}{' and more' if len(edited) > 8 else ''}")
    return lines
