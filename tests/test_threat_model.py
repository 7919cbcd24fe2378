"""docs/threat-model.md cannot rot: every test it cites exists, and every stage has its table.

A citation is ``tests/<file>.py::<test>`` or ``tests/<file>.py::<test>[<case>]``; the test must be
a function (or a method) of that file, and the case an id of its parametrisation (a string that
occurs in the test file or in tests/fixtures/). Read with ``ast``, without importing the tests.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "threat-model.md"
STAGES = ["Fetch", "Submit", "Intake", "Queue", "Worker", "Sandbox", "Publish", "Collect", "Grade", "Feedback",
          "Versions", "The hub"]
CITATION = re.compile(r"(tests/[\w/]+\.py)::(\w+)(?:\[([^\]\s]+)\])?")


def citations(text: str) -> list[tuple[str, str, str | None]]:
    """(file, test name, case or None) of each citation in ``text``."""
    return [(m[1], m[2], m[3]) for m in CITATION.finditer(text)]


@functools.cache
def _tests_of(path: Path) -> frozenset[str]:
    return frozenset(node.name for node in ast.walk(ast.parse(path.read_text()))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"))


def missing(text: str) -> list[str]:
    """The citations in ``text`` that name no existing test, each with why."""
    fixtures = "".join(p.read_text() for p in sorted((ROOT / "tests" / "fixtures").rglob("*.py")))
    out = []
    for file, name, case in citations(text):
        path = ROOT / file
        if not path.is_file():
            out.append(f"{file}::{name}: no such file")
            continue
        source = path.read_text()
        if name not in _tests_of(path):
            out.append(f"{file}::{name}: no such test")
        elif case is not None and f'"{case}"' not in source + fixtures and f"'{case}'" not in source + fixtures:
            out.append(f"{file}::{name}[{case}]: no such case")
    return out


def test_every_test_the_threat_model_cites_exists():
    text = PAGE.read_text()
    assert len(citations(text)) > 40
    assert missing(text) == []


def test_the_check_finds_a_cited_test_that_does_not_exist():
    assert missing("tests/test_threat_model.py::test_every_test_the_threat_model_cites_exists") == []
    assert missing("tests/test_threat_model.py::test_that_was_renamed") == [
        "tests/test_threat_model.py::test_that_was_renamed: no such test"]
    assert missing("tests/test_gone.py::test_x") == ["tests/test_gone.py::test_x: no such file"]
    assert missing("tests/test_grading_sandbox.py::test_hostile_submission_gets_what_it_deserves[no_such_case]") == [
        "tests/test_grading_sandbox.py::test_hostile_submission_gets_what_it_deserves[no_such_case]: no such case"]
    assert missing("tests/test_grading_sandbox.py::test_hostile_submission_gets_what_it_deserves[fork_bomb]") == []


def test_every_stage_has_a_table_of_attacks_each_with_a_test():
    sections = re.split(r"^## ", PAGE.read_text(), flags=re.M)
    tables = {s.splitlines()[0].split(" (")[0]: s for s in sections[1:]}
    for stage in STAGES:
        assert stage in tables, f"docs/threat-model.md has no section '## {stage}'"
        rows = [line for line in tables[stage].splitlines() if line.startswith("| ") and "---" not in line][1:]
        assert rows, f"the section {stage} has no attack"
        for row in rows:
            assert citations(row.rsplit("|", 2)[-2]), f"a line of {stage} cites no test: {row}"
