"""The notebooks' prose is read by many students whose first language is not English (issue 36).

Idioms. An idiom means something its words do not say ("belt and braces", "keeps it honest"), so it
has no place in an instruction, a hint or a model answer: this test fails on the ones the course has
met, and on the common ones of their kind, in every markdown cell of every source notebook (the
releases and solutions are built from them).

Long sentences. A sentence of more than MAX_WORDS (40) words, or with more than MAX_BREAKS (5)
commas and semicolons (clauses nested in clauses), must be split into plain sentences. The rule
reads every markdown cell of every source notebook and the docs a student reads (STUDENT_DOCS):
- code blocks, display math ($$...$$), HTML comments and tags, and table rows are not prose and
  are skipped; an inline code span or inline formula counts as one word;
- a heading, a list item and a paragraph each end their last sentence;
- a sentence ends at ".", "!" or "?" (or one of them and a closing bracket, quote or "*")
  followed by a space and a word that does not start in lower case. "e.g.", "i.e.", "vs." and
  decimal points do not end a sentence, and neither does a colon.
"""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "source").glob("*/*.ipynb"))
# The pages of docs/ that students read: the glossary and the debugging guide every notebook links,
# and the student guide. (The other pages are for instructors and developers.)
STUDENT_DOCS = [ROOT / "docs" / name for name in ("glossary.md", "debugging.md", "student-guide.md")]
MAX_WORDS = 40
MAX_BREAKS = 5

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
    r"\bat hand\b": "near you, open beside the notebook",
    r"\ba couple of\b": "two, a few",
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
                                   "make your code right, not just green", "Keep this table at hand:",
                                   "trained for a couple of seconds"])
def test_the_idioms_the_course_has_met_are_caught(idiom):
    assert any(re.search(pattern, idiom, flags=re.IGNORECASE) for pattern in IDIOMS)


@pytest.mark.parametrize("plain", ["Say honestly what your measurements show.", "a stand-in for the reference",
                                   "the heartbeat", "Each run gets its own loader.", "It reaches 0.91.",
                                   "A search that handles a node once."])
def test_plain_words_are_not_taken_for_idioms(plain):
    assert not any(re.search(pattern, plain, flags=re.IGNORECASE) for pattern in IDIOMS)


def _blocks(markdown: str):
    """The paragraphs, list items and headings of ``markdown``, each as one line of prose."""
    text = re.sub(r"```.*?```|<!--.*?-->", " ", markdown, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " MATH ", text, flags=re.S)
    lines: list[str] = []
    for line in text.split("\n") + [""]:
        stripped = line.strip()
        item = re.match(r"([-*+]|\d+[.)])\s+", stripped)
        if not stripped or stripped.startswith(("|", "#")) or item:
            if lines:
                yield " ".join(lines)
            lines = []
            if stripped.startswith("#"):
                yield stripped.lstrip("#")
            if item:
                lines = [stripped[item.end():]]
        else:
            lines.append(stripped)


def sentences(markdown: str):
    """The sentences of ``markdown``'s prose, by the rule of this file's docstring."""
    for block in _blocks(markdown):
        block = re.sub(r"`[^`]*`", " CODE ", block)
        block = re.sub(r"(?<!\\)\$[^$]*\$", " MATH ", block)
        block = re.sub(r"<[^>]+>", " ", block)
        block = re.sub(r"\b(e\.g|i\.e|vs|etc|cf)\.", lambda m: m.group(1).replace(".", ""), block, flags=re.I)
        block = re.sub(r"(\d)\.(\d)", r"\1\2", block)
        for sentence in re.split(r"(?:(?<=[.!?])|(?<=[.!?][)\"*]))\s+(?=[^a-z\s])", block):
            if sentence.strip():
                yield sentence.strip()


def too_long(sentence: str) -> str | None:
    """Why ``sentence`` is too long for a reader of English as a second language, or None."""
    words = [w for w in sentence.split() if re.search(r"\w", w)]
    breaks = sentence.count(",") + sentence.count(";")
    if len(words) > MAX_WORDS:
        return f"{len(words)} words (at most {MAX_WORDS})"
    if breaks > MAX_BREAKS:
        return f"{breaks} commas and semicolons (at most {MAX_BREAKS})"
    return None


def _prose():
    """(where, markdown) of every markdown cell of the source notebooks and of the student docs."""
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                yield f"{path.parent.name} cell {cell.get('id')}", "".join(cell["source"])
    for path in STUDENT_DOCS:
        yield f"docs/{path.name}", path.read_text(encoding="utf-8")


def test_no_long_or_nested_sentences_in_the_notebooks_and_the_student_docs():
    found = [f"{where}: {why}: {sentence}" for where, markdown in _prose()
             for sentence in sentences(markdown) if (why := too_long(sentence))]
    assert not found, f"{len(found)} sentences to split into plain ones:\n" + "\n".join(found)


# Sentences of the notebooks before they were split (git history, issue 36), and plain ones.
OLD_LONG_SENTENCES = [
    # 05_pooling_backward, the ties question's model answer: 101 words
    "If backward chose differently, e.g. by padding with 0 instead of $-\\infty$ (a border window of negative "
    "values would then \"choose\" a padded zero and its gradient would be cropped away and lost), by using "
    "another tie rule, by reading an input that was modified in place after forward, or by recomputing in "
    "another precision, the gradient would go to an element that did not produce the output: it is no longer "
    "the derivative of what forward computed, gradient checks on tie-free inputs fail, and results no longer "
    "match the framework (or the second-order op `MaxPoolSelect`, which reuses the same positions).",
    # 04_conv_backward, section 6's staged questions: 45 words
    "**1-D, stride 1, no padding** (`H = 1`, a kernel `(1, KW, ...)`): write your section 2 formulas for one "
    "row and one channel, with $\\mathrm dZ$ zero outside the output, and read off which correlation each one "
    "is: of what with what, how much zero padding, which kernel orientation.",
    # 01_forward_ops, the introduction: 6 commas and semicolons
    "**Words.** If a term is new to you, look it up in the [glossary](glossary.md): it gives the course's terms "
    "in English, 中文 and русский, and it explains the words with two meanings (\"adjoint\", \"dilate\" and "
    "`dilation=`, \"convolution\", \"rotate by 180°\").",
]


@pytest.mark.parametrize("sentence", OLD_LONG_SENTENCES)
def test_the_long_sentences_the_course_had_are_caught(sentence):
    assert [too_long(s) for s in sentences(sentence)] != [None]


@pytest.mark.parametrize("markdown,count", [
    ("One short sentence. Another one, e.g. with 3.5 and `a.b(c, d, e, f, g, h)` in it.", 2),
    ("- an item without a full stop\n- a second item\n\n| a, b, c, d, e, f, g | table |", 2),
    ("Text with $x_{1}, x_{2}, x_{3}, x_{4}, x_{5}, x_{6}, x_{7}$ inline math and\n$$a, b, c$$\nafter.", 1),
])
def test_code_math_tables_and_lists_are_read_as_the_rule_says(markdown, count):
    found = list(sentences(markdown))
    assert len(found) == count, found
    assert not any(too_long(s) for s in found), found


def test_a_sentence_of_forty_one_words_is_too_long_and_one_of_forty_is_not():
    assert too_long(" ".join(["word"] * 40) + ".") is None
    assert too_long(" ".join(["word"] * 41) + ".") == "41 words (at most 40)"
    assert too_long("a, b, c, d, e, f.") is None
    assert too_long("a, b, c; d, e, f, g.") == "6 commas and semicolons (at most 5)"
