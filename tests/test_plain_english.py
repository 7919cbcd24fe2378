"""The notebooks' prose is read by many students whose first language is not English (issue 36).
An idiom means something its words do not say ("belt and braces", "keeps it honest"), so it has no
place in an instruction, a hint or a model answer: this test fails on the ones the course has met,
and on the common ones of their kind, in every markdown cell of every source notebook (the releases
and solutions are built from them)."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "source").glob("*/*.ipynb"))

# An idiom, as a case-insensitive pattern, and what to write instead.
IDIOMS = {
    r"belt and braces": "a second, independent safeguard",
    r"\bdearer\b": "more expensive, slower",
    r"\bsneaks? in": "appears without being noticed",
    r"\bdrown(s|ed)? in\b": "is smaller than, is hidden by",
    r"a model is a model": "a model is only an approximation",
    r"\bkeeps? [^.]{0,60}\bhonest\b": "makes ... explicit",
    r"not just green": "right for every input, not only for the visible checks",
    r"\breach(es)? for\b": "use",
    r"\bvouch(es)? for\b": "test, confirm",
    r"\banecdote\b": "proves little",
    r"\bhides? from\b": "is missed by",
    r"\bget hold of\b": "reach, keep a reference to",
    r"\bhopeless\b": "far too slow, cannot work",
    r"\bbe fooled\b": "give a wrong answer",
    r"\bthe heart of\b": "used in, the main part of",
    r"\bspoils?\b": "breaks, changes",
    r"\bnudg(e|es|ed|ing)\b": "change a little",
    r"\bstands? in for\b": "plays the role of",
    r"\bexplodes?\b": "becomes very large",
    r"\bgets? it there\b": "makes it this fast",
    r"under the hood": "inside",
    r"out of the box": "without changes",
    r"\bon the fly\b": "while it runs",
    r"\bboils? down to\b": "is, comes to",
    r"rule of thumb": "a simple rule",
    r"in a nutshell": "in short",
    r"free lunch": "a saving without a cost",
    r"low-hanging fruit": "the easy gains",
    r"sweet spot": "the best value",
    r"\bkicks? in\b": "starts, takes effect",
    r"no-brainer": "the obvious choice",
    r"at the end of the day": "in the end",
    r"the devil is in": "the difficulty is in",
    r"\bbottom line\b": "the result",
    r"\bballpark\b": "rough, about",
    r"apples (to|and) (apples|oranges)": "a fair comparison, things that cannot be compared",
    r"a far cry from": "very different from",
    r"tip of the iceberg": "a small part",
    r"heavy lifting": "most of the work",
    r"hand-wav": "vague",
    r"\bspot on\b": "exactly right",
    r"\bpays? off\b": "is worth its cost",
    r"\bfor free\b": "at no extra cost",
}


def _markdown_cells():
    """(where, text) of every markdown cell, its lines joined by spaces: an idiom may span two lines."""
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                yield f"{path.parent.name} cell {cell.get('id')}", " ".join("".join(cell["source"]).split())


def test_no_idioms_in_the_notebooks():
    found = [f"{where}: {match.group(0)!r} (write: {plain}): ...{text[max(0, match.start() - 50):match.end() + 50]}..."
             for where, text in _markdown_cells()
             for pattern, plain in IDIOMS.items()
             for match in re.finditer(pattern, text, flags=re.IGNORECASE)]
    assert not found, "idioms in the notebooks' prose:\n" + "\n".join(found)


@pytest.mark.parametrize("idiom", ["That keeps every gradient in assignment 02 honest.",
                                   "Belt and braces: we also copy the weights.", "It is dearer in memory.",
                                   "A bug sneaks in.", "The effect would drown in the noise.",
                                   "make your code right, not just green"])
def test_the_idioms_the_course_has_met_are_caught(idiom):
    assert any(re.search(pattern, idiom, flags=re.IGNORECASE) for pattern in IDIOMS)


@pytest.mark.parametrize("plain", ["Say honestly what your measurements show.", "a stand-in for the reference",
                                   "the heartbeat", "Each run gets its own loader.", "It reaches 0.91."])
def test_plain_words_are_not_taken_for_idioms(plain):
    assert not any(re.search(pattern, plain, flags=re.IGNORECASE) for pattern in IDIOMS)
