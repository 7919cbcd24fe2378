"""Text from a submission, made safe to print on the instructor's terminal.

A check's failure message, a cell's error, a student id or a file name is the student's to
choose. Printed as it is, ``\\x1b[2J`` clears the instructor's screen, cursor movement and ``\\r``
draw over what the grader printed (a fake "7 of 7 passed"), and U+202E turns the rest of a line
around. ``printable`` shows such characters as escapes instead, the way Python's repr does.
"""
from __future__ import annotations

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
