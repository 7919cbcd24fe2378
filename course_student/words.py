"""Counted nouns in messages: "1 point", "2 points", "0.5 points" (never "1 points" or "point(s)").

tests/test_words.py keeps "(s)" and a bare "{n} points" out of the bundle's messages."""
from __future__ import annotations


def plural(count: float, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, the noun in the plural unless ``count`` is exactly 1; ``many``: an
    irregular plural ("analyses")."""
    return f"{count:g} {word if count == 1 else (many or word + 's')}"


def noun(count: float, word: str, many: str | None = None) -> str:
    """The noun alone, as ``plural`` would write it after ``count`` ("of 3 {noun(3, 'point')}")."""
    return word if count == 1 else (many or word + "s")
