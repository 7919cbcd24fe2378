"""`course` starts quickly: what its command line imports before any command runs, and what the
gradebook's commands add, leaves out the modules that cost seconds (issue 39: 4.5 s to --help).
Measured as imports, not as time: benchmarks time, tests assert what can be asserted exactly."""
from __future__ import annotations

import json
import subprocess
import sys

# Each costs from a quarter of a second (nbgrader's server extensions) to several (rfc3987_syntax
# builds an IRI parser at import; torch) on this machine; no command needs them just to start.
SLOW_TO_IMPORT = ("rfc3987_syntax", "torch", "nbgrader", "sqlalchemy", "nbconvert", "jupyter_client", "dask")


def _imported_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps([m for m in {SLOW_TO_IMPORT!r} if sys.modules.get(m) is not None]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_command_line_imports_nothing_slow_before_a_command_runs():
    assert _imported_after("import course_tools.cli") == []
    assert _imported_after("import course_student.cli") == []


def test_the_gradebook_commands_never_build_the_iri_parser():
    assert "rfc3987_syntax" not in _imported_after("import course_tools.cli\nimport nbgrader.api")
