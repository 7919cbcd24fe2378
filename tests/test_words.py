"""Counted nouns: "1 point", never "1 points" or "point(s)", in every message the bundle writes."""
import io
import re
import tokenize
from pathlib import Path

from course_student.words import noun, plural

ROOT = Path(__file__).resolve().parents[1]
# A count right before "points" (f-string field or %-format): it must go through plural().
BARE_COUNT = re.compile(r"(\}|%[dgsf]) points?\b")
MAYBE_PLURAL = re.compile(r"\b(?!http\(s\))[a-z]{2,}\(s\)")


def test_plural_agrees_with_the_count():
    assert [plural(n, "point") for n in (0, 1, 0.5, 2, 14)] == ["0 points", "1 point", "0.5 points", "2 points",
                                                               "14 points"]
    assert plural(1, "grading error") == "1 grading error" and noun(3, "analysis", "analyses") == "analyses"


def test_no_message_counts_without_plural():
    """Every string literal of the bundle's code (the library, the tools, the student commands, the
    hidden suites): no "(s)" plural, no count written straight before "points"."""
    found = []
    for folder in ("course_lib", "course_tools", "course_student", "autograder"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "words.py":
                continue
            tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            for token in tokens:
                if token.type == tokenize.STRING and (BARE_COUNT.search(token.string)
                                                      or MAYBE_PLURAL.search(token.string)):
                    found.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string[:80]}")
    assert not found, "\n".join(found)
