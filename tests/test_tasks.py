"""Solution regions in course_lib match the task list: every ``### BEGIN SOLUTION <id>`` is closed
by ``### END SOLUTION <id>``, every id is a task of LIBRARY_TASKS, every task has a region."""
import re
from pathlib import Path

import pytest

import course_lib
from course_lib.tasks import LIBRARY_TASKS

PACKAGE = Path(course_lib.__file__).parent
MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION(?:\s+(\S+))?\s*$")
ALL_TASKS = [task for tasks in LIBRARY_TASKS.values() for task in tasks]


def source_files():
    return sorted(PACKAGE.rglob("*.py"))


def regions(path: Path):
    """[(task_id, begin_line, end_line)] of one file; AssertionError on a malformed region."""
    found, open_region = [], None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = MARKER.match(line)
        if match is None:
            assert not re.match(r"^\s*#+\s*(BEGIN|END)\s+SOLUTION", line), \
                f"{path.name}:{number}: malformed solution marker {line.strip()!r}"
            continue  # prose that mentions a marker mid-line is not a marker
        kind, task = match.groups()
        assert task, f"{path.name}:{number}: {kind} SOLUTION without a task id"
        if kind == "BEGIN":
            assert open_region is None, \
                f"{path.name}:{number}: BEGIN {task} inside the region {open_region[0]} opened at line {open_region[1]}"
            open_region = (task, number)
        else:
            assert open_region is not None, f"{path.name}:{number}: END {task} without a BEGIN"
            assert task == open_region[0], \
                f"{path.name}:{number}: END {task} closes BEGIN {open_region[0]} (line {open_region[1]})"
            found.append((task, open_region[1], number))
            open_region = None
    assert open_region is None, f"{path.name}: BEGIN {open_region[0]} at line {open_region[1]} is never closed"
    return found


def all_region_ids():
    return {task for path in source_files() for task, _, _ in regions(path)}


def test_the_package_has_solution_regions():
    assert source_files(), f"no Python files under {PACKAGE}"
    assert all_region_ids(), "no solution region found at all"


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_begin_has_a_matching_end(path):
    for task, begin, end in regions(path):
        assert end > begin + 1, f"{path.name}: region {task} (lines {begin}-{end}) is empty"


def test_task_ids_are_unique_across_assignments():
    assert len(ALL_TASKS) == len(set(ALL_TASKS)), "a task id is listed in two assignments"


def test_every_region_id_is_a_library_task():
    unknown = all_region_ids() - set(ALL_TASKS)
    assert not unknown, f"solution regions with task ids missing from LIBRARY_TASKS: {sorted(unknown)}"


@pytest.mark.parametrize("task", ALL_TASKS)
def test_every_library_task_has_a_region(task):
    assert task in all_region_ids(), f"LIBRARY_TASKS lists {task!r} but no '### BEGIN SOLUTION {task}' exists"
