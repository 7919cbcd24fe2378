"""Build what students and self-paced learners open, from source/:

    assignments/<id>/   nbgrader's generate_assignment of source/<id>/, plus the student-facing
                        course_lib for that assignment (earlier tasks kept, later ones stubbed)
    solutions/<id>/     the source notebook executed top to bottom, outputs and figures kept
    both                glossary.md and debugging.md, copies of the docs/ pages every notebook links to

    python -m course_tools.build                 # rebuild everything
    python -m course_tools.build 03_ndarray      # one assignment
    python -m course_tools.build --check         # fail if the committed builds are stale

``--check`` compares releases exactly, and solutions by their cells' sources and metadata
(their outputs hold timings, which differ from run to run).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from tqdm.auto import tqdm

from course_lib import tasks
from course_student.env import QUIET_KERNEL, kernel_environment, tool_env  # one home, shared with `course check`
from course_student.words import noun, plural

from .paths import RELEASE, ROOT, SOLUTIONS, SOURCE
from .student_lib import build_student_lib

GENERATED_NOTE = "generated from source/{id}/{id}.ipynb by `python -m course_tools.build` - do not edit; edit the source"
SOLUTION_TIMEOUT_S = 600
GLOSSARY = ROOT / "docs" / "glossary.md"
DEBUGGING = ROOT / "docs" / "debugging.md"
# The pages of docs/ that every notebook links: copied beside it, so that the links work in a
# release handed out alone (offline, or in a hub that serves only the release folder).
STUDENT_PAGES = (GLOSSARY, DEBUGGING)
PAGE_NOTE = "<!-- generated from docs/{name} by `python -m course_tools.build` - do not edit; edit docs/{name} -->\n"


class BuildError(RuntimeError):
    pass


def source_notebook(assignment: str) -> Path:
    path = SOURCE / assignment / f"{assignment}.ipynb"
    if not path.exists():
        raise BuildError(f"no source notebook for {assignment}: expected {path.relative_to(ROOT)}")
    return path


def release_notebook(assignment: str) -> Path:
    """The student release of ``assignment`` (what students get, and what grading compares with)."""
    return RELEASE / assignment / f"{assignment}.ipynb"


def manual_tasks(assignment: str) -> dict[str, float]:
    """The release's hand-graded cells (written answers): task id -> points."""
    nb = nbformat.read(str(release_notebook(assignment)), as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and meta.get("solution") and meta.get("points") is not None:
            out[meta["grade_id"]] = float(meta["points"])
    return out


def available_assignments() -> list[str]:
    return [a for a in tasks.ASSIGNMENTS if (SOURCE / a / f"{a}.ipynb").exists()]


def _mark_generated(path: Path, assignment: str) -> None:
    nb = nbformat.read(str(path), as_version=4)
    nb.metadata.setdefault("course", {})["generated"] = GENERATED_NOTE.format(id=assignment)
    nbformat.write(nb, str(path))


def student_page_text(page: Path) -> str:
    """page (one of STUDENT_PAGES) as the build copies it beside a notebook: a banner, then the page."""
    return PAGE_NOTE.format(name=page.name) + page.read_text(encoding="utf-8")


def _copy_student_pages(folder: Path) -> None:
    for page in STUDENT_PAGES:
        (folder / page.name).write_text(student_page_text(page), encoding="utf-8")


def build_release(assignment: str, out_root: Path = RELEASE) -> Path:
    """nbgrader generate_assignment in a scratch course, then the student-facing course_lib."""
    source_notebook(assignment)
    with tempfile.TemporaryDirectory(prefix="course-release-") as scratch:
        course = Path(scratch)
        shutil.copytree(SOURCE / assignment, course / "source" / assignment,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "course_lib"))
        _copy_student_pages(course / "source" / assignment)   # released by nbgrader with the notebook
        result = subprocess.run(
            [sys.executable, "-m", "nbgrader", "generate_assignment", assignment, "--force",
             f"--CourseDirectory.root={course}", "--CourseDirectory.release_directory=release",
             f"--CourseDirectory.db_url=sqlite:///{course}/gradebook.db"],
            cwd=course, env=tool_env(), capture_output=True, text=True)
        released = course / "release" / assignment
        if result.returncode != 0 or not released.exists():
            raise BuildError(f"nbgrader generate_assignment {assignment} failed:\n{result.stdout}\n{result.stderr}")
        dest = out_root / assignment
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(released, dest)
    for notebook in dest.glob("*.ipynb"):
        _mark_generated(notebook, assignment)
    build_student_lib(assignment, dest / "course_lib")
    return dest


def execute_notebook(path: Path, cwd: Path, timeout: int = SOLUTION_TIMEOUT_S, allow_errors: bool = False,
                     extra_env: dict | None = None):
    """Run every cell of the notebook at ``path`` in a fresh kernel started in ``cwd``."""
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
                            record_timing=False, resources={"metadata": {"path": str(cwd)}},
                            extra_arguments=QUIET_KERNEL)
    with kernel_environment(MPLBACKEND="module://matplotlib_inline.backend_inline", **(extra_env or {})):
        client.execute(cwd=str(cwd))
    return nb


def build_solution(assignment: str, out_root: Path = SOLUTIONS) -> tuple[Path, float]:
    """Execute the source notebook against the reference course_lib; returns (path, seconds)."""
    source = source_notebook(assignment)
    dest = out_root / assignment
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="course-solution-") as scratch:
        work = Path(scratch)
        shutil.copytree(SOURCE / assignment, work, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        start = time.perf_counter()
        try:
            nb = execute_notebook(work / source.name, work)
        except Exception as err:  # name the assignment; nbclient's message names the cell
            raise BuildError(f"solution notebook of {assignment} failed to execute: {err}") from err
        seconds = time.perf_counter() - start
    nb.metadata.setdefault("course", {})["generated"] = GENERATED_NOTE.format(id=assignment)
    nbformat.write(nb, str(dest / source.name))
    _copy_student_pages(dest)
    return dest / source.name, seconds


def build(assignments: list[str], out_release: Path = RELEASE, out_solutions: Path = SOLUTIONS,
          solutions: bool = True) -> dict[str, float]:
    """Build releases (and solutions) of ``assignments``; returns seconds per solution run."""
    timings = {}
    steps = len(assignments) * (2 if solutions else 1)
    with tqdm(total=steps, desc="building", unit="step") as bar:
        for assignment in assignments:
            bar.set_postfix_str(f"{assignment} release")
            build_release(assignment, out_release)
            bar.update(1)
            if solutions:
                bar.set_postfix_str(f"{assignment} solution")
                _, timings[assignment] = build_solution(assignment, out_solutions)
                bar.update(1)
    return timings


def _comparable_solution(path: Path) -> str:
    nb = nbformat.read(str(path), as_version=4)
    cells = [{"type": c.cell_type, "source": c.source, "nbgrader": c.metadata.get("nbgrader")} for c in nb.cells]
    return json.dumps({"course": nb.metadata.get("course"), "kernelspec": nb.metadata.get("kernelspec"),
                       "cells": cells}, sort_keys=True, indent=1)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def compare_builds(assignments: list[str], fresh_release: Path, fresh_solutions: Path) -> list[str]:
    """Committed paths that differ from the fresh build in ``fresh_release`` / ``fresh_solutions``
    (releases byte for byte; solutions by cell sources and metadata)."""
    problems = []
    for assignment in assignments:
        fresh, committed = _tree(fresh_release / assignment), _tree(RELEASE / assignment)
        for name in sorted(set(fresh) | set(committed)):
            if fresh.get(name) != committed.get(name):
                problems.append(f"assignments/{assignment}/{name}")
        for notebook in (fresh_solutions / assignment).glob("*.ipynb"):
            committed_nb = SOLUTIONS / assignment / notebook.name
            if not committed_nb.exists() or _comparable_solution(notebook) != _comparable_solution(committed_nb):
                problems.append(f"solutions/{assignment}/{notebook.name}")
        for page in STUDENT_PAGES:
            fresh_page, committed_page = (root / assignment / page.name for root in (fresh_solutions, SOLUTIONS))
            if fresh_page.exists() and (not committed_page.exists()
                                        or fresh_page.read_bytes() != committed_page.read_bytes()):
                problems.append(f"solutions/{assignment}/{page.name}")
    return problems


def stale_files(assignments: list[str]) -> list[str]:
    """Paths whose committed content differs from a fresh build."""
    with tempfile.TemporaryDirectory(prefix="course-check-") as scratch:
        fresh_release, fresh_solutions = Path(scratch) / "assignments", Path(scratch) / "solutions"
        build(assignments, fresh_release, fresh_solutions)
        return compare_builds(assignments, fresh_release, fresh_solutions)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignments", nargs="*", help="assignment ids (default: every one with a source notebook)")
    parser.add_argument("--check", action="store_true", help="only report builds that are out of date")
    parser.add_argument("--no-solutions", action="store_true", help="build the releases only")
    args = parser.parse_args(argv)
    chosen = args.assignments or available_assignments()
    unknown = [a for a in chosen if a not in tasks.ASSIGNMENTS]
    if unknown:
        parser.error(f"unknown {noun(len(unknown), 'assignment')} {', '.join(unknown)}; known: {', '.join(tasks.ASSIGNMENTS)}")
    try:
        if args.check:
            stale = stale_files(chosen)
            if stale:
                print("out of date (run `python -m course_tools.build`):\n  " + "\n  ".join(stale))
                return 1
            print(f"releases and solutions of {plural(len(chosen), 'assignment')} are up to date")
            return 0
        timings = build(chosen, solutions=not args.no_solutions)
    except BuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for assignment, seconds in timings.items():
        print(f"{assignment:24s} solution executed in {seconds:5.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
