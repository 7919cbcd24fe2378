"""Text from a submission, made safe to print on the instructor's terminal.

A check's failure message, a cell's error, a student id or a file name is the student's to
choose. Printed as it is, ``\\x1b[2J`` clears the instructor's screen, cursor movement and ``\\r``
draw over what the grader printed (a fake "7 of 7 passed"), and U+202E turns the rest of a line
around. ``printable`` shows such characters as escapes instead, the way Python's repr does.
"""
from __future__ import annotations

import logging
import unicodedata

_KEPT = {"\n", "\t"}
# Control (C0, DEL, C1), format (bidi overrides and isolates, zero-width characters), surrogates
# (which print() cannot even encode), private use, unassigned, and the line and paragraph
# separators some terminals break lines on.
_ESCAPED_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\r":
        return "\\r"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text) -> str:
    """``text`` with every character a terminal would act on (other than newline and tab) written
    as an escape such as ``\\x1b``, ``\\r`` or ``\\u202e``; plain text comes back unchanged."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(_escape(char) if char not in _KEPT and unicodedata.category(char) in _ESCAPED_CATEGORIES
                   else char for char in text)


def one_line(text) -> str:
    """``printable(text)`` with its newlines escaped too: a value placed in a line of a log, which
    must not start a line of its own (a forged "ALL 10 TASKS PASSED" after a folder's name)."""
    return printable(text).replace("\n", "\\n")


class PrintableFormatter(logging.Formatter):
    """A log format for the instructor's terminal (`course serve`): each argument of a record
    through ``one_line`` (folder names, grade ids and error messages are the students' to
    choose), then the whole formatted record, traceback included, through ``printable``."""

    def format(self, record: logging.LogRecord) -> str:
        if record.args:
            record = logging.makeLogRecord(record.__dict__)
            if isinstance(record.args, dict):
                record.args = {key: _safe_arg(value) for key, value in record.args.items()}
            else:
                record.args = tuple(_safe_arg(value) for value in record.args)
        return printable(super().format(record))


def _safe_arg(value):
    return value if isinstance(value, (int, float)) else one_line(value)


def log_to_terminal(level: int = logging.INFO) -> None:
    """Send the process's log records to stderr through PrintableFormatter (once; a process
    whose log is already configured, by the tests' capture say, keeps its handlers)."""
    handler = logging.StreamHandler()
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
