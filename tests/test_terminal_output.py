"""What a command prints from a submission never drives the instructor's terminal.

A submission's error message is its own text: escape sequences in it would clear the screen,
move the cursor and draw a fake "7 of 7 passed" over the real result, and U+202E would turn a
line around. Graded the real way (``python -m course_tools.grading.suite``, the sandboxed
worker), the printed feedback shows them as visible escapes instead.
"""
from __future__ import annotations

import subprocess
import sys
import unicodedata

import nbformat

from course_tools.build import tool_env
from course_tools.table import format_table
from course_tools.terminal import printable
from grading_support import ROOT, require_sandbox, source

ASSIGNMENT = "01_forward_ops"
# Clear the screen, home the cursor, draw a green "all passed", overwrite the line with \r, move
# up a line and erase it, a C1 CSI (\x9b), a bidi override and a zero-width space.
FORGED = ("\x1b[2J\x1b[H\x1b[32mHidden checks for forward_negate: 7 of 7 passed (1 / 1 points)\x1b[0m"
          "\r\x1b[1A\x1b[2K\x9b31m \u202edessap\u202c\u200b \x07")


def _raw_controls(text: str) -> list[str]:
    return sorted({repr(ch) for ch in text if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf")})


def test_printable_escapes_controls_and_keeps_plain_text():
    plain = "Hidden checks for forward_negate: 1 of 7 passed \N{CHECK MARK} \N{BALLOT X} \N{STOPWATCH} é ∂x/∂y\n\tok"
    assert printable(plain) == plain
    assert printable("a\x1b[2Jb\rc\u202ed\x9be\ud800") == "a\\x1b[2Jb\\rc\\u202ed\\x9be\\ud800"
    assert printable(printable(FORGED)) == printable(FORGED)  # escaping twice changes nothing more
    table = format_table(["student", "note"], [["eve\x1b[2J", "x\u202ey"], ["ada", ""]])
    assert not _raw_controls(table) and "eve\\x1b[2J" in table
    widths = {len(line) for line in table.splitlines()[1:3]}  # the rule and the row under it
    assert len(widths) == 1  # the columns line up with what the terminal shows


def test_the_suite_prints_a_submissions_escape_codes_as_visible_text(tmp_path):
    require_sandbox()
    nb = source(ASSIGNMENT)
    (cell,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "forward_negate_code"]
    cell.source = cell.source.replace("    return -a\n", f"    raise ValueError({FORGED!r})\n")
    assert "raise ValueError" in cell.source
    path = tmp_path / "forged.ipynb"
    nbformat.write(nb, str(path))
    done = subprocess.run([sys.executable, "-m", "course_tools.grading.suite", ASSIGNMENT, str(path)], cwd=ROOT,
                          env=tool_env(), capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "Hidden checks for forward_negate: 0 of" in out  # the real result is there
    assert _raw_controls(out) == [], out
    assert "\\x1b[2J" in out and "\\x1b[1A" in out and "\\u202e" in out and "\\x9b31m" in out
    assert "Hidden checks for forward_transpose: 4 of 4 passed" in out or "forward_transpose" in out


def test_the_course_commands_print_through_printable(capsys, tmp_path):
    """Every line `course` prints goes through one _say per command module (collect, grade,
    feedback, export in instructor.py; status in status.py; report and similarity in report.py)
    and its error path."""
    from course_tools.cli import instructor, report, status
    from course_tools.cli import main as course
    from course_tools.course_dir import init_course

    folder = init_course(tmp_path / "course", "terminal", exchange=tmp_path / "exchange").root

    instructor._say(f"  mallory: {FORGED}")
    report._say(f"  GRADING ERROR (not a score): mallory: {FORGED}")
    status._say(f"  RETRY mallory: {FORGED}")
    assert course(["collect", "no-such-assignment\x1b[2J", "--course", str(folder)]) != 0  # a CourseError
    printed = capsys.readouterr()
    assert _raw_controls(printed.out + printed.err) == []
    assert printed.out.count("\\x1b[2J") == 3 and "no-such-assignment\\x1b[2J" in printed.err
