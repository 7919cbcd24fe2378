"""Each test file's seconds in a measured run of the whole suite (tests/file_seconds.json), and the
order `make test` starts the files in: the longest first (tests/conftest.py).

`make test` runs on pytest-xdist workers that each take whole files in the collection's order
(--dist loadfile --no-loadscope-reorder); a long file started last keeps one worker busy while the
others wait. So the collection is sorted by the seconds each file took in the last full run.
Files with no measurement (added since that run) go last, in pytest's order: ordering them first
would start every unmeasured file before the long measured ones, the very tail this avoids, while
a new file, kept to tens of seconds as new tests must be, extends the end by that much at worst.

`make test` also writes pytest's junit XML to .pytest-junit.xml (gitignored). After a full run,
CI's for preference, regenerate the JSON from it with the command in ``COMMAND``:

    .venv/bin/python tests/file_seconds.py .pytest-junit.xml

The JSON (generated: change the run, not the file):

    {"_generated": "by `<COMMAND>` ...; do not edit",
     "seconds": {"tests/test_autograder.py": 695.0, ...}}

``seconds``: per file (its path in the node ids, from the repository's root), the sum of its test
cases' junit times (setup, call and teardown together), in seconds to 0.1, longest first. Other
keys are notes for the reader; only ``seconds`` is read.
"""
from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

TIMES = Path(__file__).resolve().parent / "file_seconds.json"
JUNIT = ".pytest-junit.xml"   # where `make test` writes it (the Makefile)
COMMAND = f".venv/bin/python tests/file_seconds.py {JUNIT}"


def file_of(classname: str) -> str | None:
    """The test file of a junit ``classname`` ("tests.test_x" or "tests.test_x.TestY": the node id's
    path with dots, then its classes), as a node id writes it ("tests/test_x.py"); None when no
    part is a test module (test_*)."""
    parts = classname.split(".")
    for index, part in enumerate(parts):
        if part.startswith("test_"):
            return "/".join(parts[:index + 1]) + ".py"
    return None


def seconds_by_file(junit: Path) -> dict[str, float]:
    """{test file: total seconds} of a pytest junit XML file, longest first; ValueError for a file
    that is not one (or holds no test case of a test file)."""
    try:
        cases = list(ElementTree.parse(junit).iter("testcase"))
    except ElementTree.ParseError as err:
        raise ValueError(f"{junit} is not XML ({err}): give the file `pytest --junitxml` wrote") from None
    totals: dict[str, float] = {}
    for case in cases:
        name = file_of(case.get("classname", ""))
        if name is not None:
            totals[name] = totals.get(name, 0.0) + float(case.get("time") or 0.0)
    if not totals:
        raise ValueError(f"{junit} has no <testcase> of a test_*.py file: is it `pytest --junitxml` output of a run?")
    return dict(sorted(((name, round(total, 1)) for name, total in totals.items()), key=lambda kv: (-kv[1], kv[0])))


def write(seconds: dict[str, float], path: Path | None = None) -> None:
    path = TIMES if path is None else path
    document = {"_generated": f"by `{COMMAND}` after a full `make test` run; do not edit", "seconds": seconds}
    path.write_text(json.dumps(document, indent=1) + "\n")


def load(path: Path | None = None) -> dict[str, float]:
    """The measured seconds by test file (``path``: TIMES); {} where there is no file (every file
    then keeps pytest's order)."""
    path = TIMES if path is None else path
    if not path.exists():
        return {}
    return json.loads(path.read_text())["seconds"]


def longest_first(items: list, seconds: dict[str, float]) -> None:
    """Sort pytest's collected ``items`` in place: files in ``seconds`` longest first, then the rest
    in their collected order. Stable, so every xdist worker sorts the same collection alike."""
    def key(item) -> tuple[int, float]:
        measured = seconds.get(item.nodeid.split("::", 1)[0])
        return (1, 0.0) if measured is None else (0, -measured)

    items.sort(key=key)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(f"usage: {COMMAND}", file=sys.stderr)
        return 2
    junit = Path(argv[0])
    if not junit.is_file():
        print(f"{junit} does not exist: `make test` writes it ({JUNIT})", file=sys.stderr)
        return 2
    try:
        seconds = seconds_by_file(junit)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    write(seconds)
    print(f"{TIMES}: {len(seconds)} files, {sum(seconds.values()) / 60:.1f} min in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
