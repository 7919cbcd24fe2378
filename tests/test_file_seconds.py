"""`make test`'s order of test files comes from measured seconds (tests/file_seconds.py): the
collection hook of tests/conftest.py sorts by tests/file_seconds.json, the tool writes that file
from pytest's junit XML, and the checked-in file names only test files that exist."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import file_seconds
from conftest import pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parents[1]

# As pytest (xunit2, the default family) writes it, under pytest-xdist too: classname is the node
# id's path with dots, then its classes; time is setup, call and teardown together.
JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="6" time="14.0">
<testcase classname="tests.test_short" name="test_one" time="0.300" />
<testcase classname="tests.test_long.TestGroup" name="test_a[cpu-float64]" time="9.000" />
<testcase classname="tests.test_long" name="test_b" time="3.125"><failure message="assert 1 == 2">...</failure></testcase>
<testcase classname="tests.test_short" name="test_skipped" time="0.000"><skipped message="no GPU" /></testcase>
<testcase classname="tests.test_middle" name="test_c" time="1.500" />
<testcase classname="" name="tests" time="0.100"><error message="collection failure" /></testcase>
</testsuite></testsuites>
"""


def _items(*nodeids: str) -> list:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def _files(items) -> list[str]:
    return [item.nodeid.split("::")[0] for item in items]


def test_the_collection_hook_orders_files_by_the_json_longest_first_and_unmeasured_files_last(tmp_path,
                                                                                              monkeypatch):
    times = tmp_path / "file_seconds.json"
    times.write_text(json.dumps({"_generated": "a test's", "seconds": {"tests/test_b.py": 50.0, "tests/test_c.py": 7.5,
                                                                       "tests/test_gone.py": 900.0}}))
    monkeypatch.setattr(file_seconds, "TIMES", times)
    items = _items("tests/test_a.py::test_1", "tests/test_c.py::test_1", "tests/test_new.py::test_1",
                   "tests/test_b.py::test_1", "tests/test_c.py::TestK::test_2[x]", "tests/test_b.py::test_2")
    pytest_collection_modifyitems(items)
    # b (50 s) then c (7.5 s), each file's tests in their order; a and new, unmeasured, last in pytest's order.
    assert [item.nodeid for item in items] == [
        "tests/test_b.py::test_1", "tests/test_b.py::test_2", "tests/test_c.py::test_1",
        "tests/test_c.py::TestK::test_2[x]", "tests/test_a.py::test_1", "tests/test_new.py::test_1"]
    # Another JSON, another order: the hook reads the file, not a list of its own.
    times.write_text(json.dumps({"seconds": {"tests/test_a.py": 1.0, "tests/test_c.py": 2.0}}))
    items = _items("tests/test_b.py::test_1", "tests/test_a.py::test_1", "tests/test_c.py::test_1")
    pytest_collection_modifyitems(items)
    assert _files(items) == ["tests/test_c.py", "tests/test_a.py", "tests/test_b.py"]


def test_the_checked_in_seconds_put_the_longest_measured_file_first():
    seconds = file_seconds.load()
    assert seconds, file_seconds.TIMES
    items = _items("tests/test_layers.py::test_x", "tests/test_hub.py::test_y", "tests/test_autograder.py::test_z")
    pytest_collection_modifyitems(items)
    longest = max(("tests/test_layers.py", "tests/test_hub.py", "tests/test_autograder.py"),
                  key=lambda name: seconds.get(name, -1))
    assert _files(items)[0] == longest


def test_the_tool_sums_each_files_junit_times_and_writes_them_longest_first(tmp_path, monkeypatch):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    assert file_seconds.seconds_by_file(junit) == {"tests/test_long.py": 12.1, "tests/test_middle.py": 1.5,
                                                   "tests/test_short.py": 0.3}
    out = tmp_path / "file_seconds.json"
    monkeypatch.setattr(file_seconds, "TIMES", out)
    assert file_seconds.main([str(junit)]) == 0
    written = json.loads(out.read_text())
    assert list(written["seconds"]) == ["tests/test_long.py", "tests/test_middle.py", "tests/test_short.py"]
    assert file_seconds.COMMAND in written["_generated"] and "do not edit" in written["_generated"]


def test_the_tool_refuses_what_is_not_a_junit_file_of_a_run(tmp_path, capsys):
    not_xml, empty = tmp_path / "notes.txt", tmp_path / "empty.xml"
    not_xml.write_text("test_autograder 695\n")
    empty.write_text('<testsuites><testsuite name="pytest" tests="0" /></testsuites>')
    assert file_seconds.main([str(not_xml)]) == 2
    assert "is not XML" in capsys.readouterr().err
    assert file_seconds.main([str(empty)]) == 2
    assert "has no <testcase> of a test_*.py file" in capsys.readouterr().err
    assert file_seconds.main([str(tmp_path / "missing.xml")]) == 2
    assert "make test` writes it" in capsys.readouterr().err


def test_the_checked_in_file_names_only_test_files_that_exist_and_says_how_it_is_made():
    document = json.loads(file_seconds.TIMES.read_text())
    gone = [name for name in document["seconds"] if not (ROOT / name).is_file()]
    assert gone == [], f"renamed or removed since the measurement: {gone}; regenerate: {file_seconds.COMMAND}"
    assert document["_generated"].startswith(f"by `{file_seconds.COMMAND}`")


def test_the_tool_runs_as_the_docs_say():
    """`python tests/file_seconds.py` from the repository's root, as docs/setup.md writes it."""
    assert file_seconds.COMMAND in (ROOT / "docs" / "setup.md").read_text()
    done = subprocess.run([sys.executable, "tests/file_seconds.py"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == f"usage: {file_seconds.COMMAND}"
