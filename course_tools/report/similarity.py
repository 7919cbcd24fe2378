"""`course similarity`: which submissions' solution code is suspiciously alike.

Each student's *solution cells* (the cells nbgrader marks as the student's to write) are turned
into a normalised token stream, then fingerprinted by winnowing (Schleimer, Wilkerson and Aiken,
2003, the method behind MOSS):

    normalise    drop comments, blank lines and docstrings; every name that is not a keyword, a
                 builtin or an attribute becomes V (renaming variables changes nothing); strings
                 become S and numbers N
    reorder      top-level statements of a cell (helper functions, say) are put in a canonical
                 order, so moving them around changes nothing
    k-grams      hashes of every K consecutive tokens; in each window of W hashes the smallest is
                 kept (a fingerprint), with the source lines it came from
    given code   fingerprints of the release's own cells (stubs, signatures, given lines) are
                 removed: they are not similarity
    similarity   shared fingerprints / the smaller submission's fingerprints

Pairs are ranked by similarity; a pair's report shows both students' matching lines side by
side. The ranking says where to look, not who copied.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import io
import itertools
import keyword
import tokenize
from collections import defaultdict
from dataclasses import dataclass, field

import nbformat

K, WINDOW = 12, 8
MIN_FINGERPRINTS = 6   # submissions with fewer (blank releases, stubs) are not compared
_KEEP = set(dir(builtins)) | {"self", "np", "nd", "ops", "Tensor", "NDArray", "nn"}


@dataclass
class Code:
    """One student's solution code, normalised: tokens with the (cell, line) each came from."""
    student: str
    cells: dict[str, str]                               # grade_id -> source
    tokens: list[str] = field(default_factory=list)
    origins: list[tuple[str, int]] = field(default_factory=list)
    fingerprints: dict[int, list[tuple[str, int]]] = field(default_factory=dict)  # hash -> origins


def solution_cells(nb, ids: list[str]) -> dict[str, str]:
    """The sources of the solution cells ``ids`` (found by grade id) of a notebook."""
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells if c.cell_type == "code"}
    return {gid: by_id[gid].source for gid in ids if gid in by_id}


def solution_ids(release) -> list[str]:
    return [c.metadata["nbgrader"]["grade_id"] for c in release.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]


def _tokens(source: str, first_line: int) -> list[tuple[str, int]]:
    out, previous = [], None
    try:
        stream = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return [(word, first_line + i) for i, line in enumerate(source.splitlines()) for word in line.split()]
    for tok in stream:
        kind, text, line = tok.type, tok.string, first_line + tok.start[0] - 1
        if kind in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                    tokenize.ENDMARKER, tokenize.ENCODING):
            continue
        if kind == tokenize.NAME and not keyword.iskeyword(text) and text not in _KEEP \
                and not (previous is not None and previous.string == "."):
            text = "V"
        elif kind == tokenize.STRING:
            text = "S"
        elif kind == tokenize.NUMBER:
            text = "N"
        out.append((text, line))
        previous = tok
    return out


def _blocks(source: str) -> list[tuple[str, int]]:
    """Top-level statements of a cell as (source, first line), docstrings dropped; one block if
    the cell does not parse (a student's work in progress)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return [(source, 1)]
    lines = source.splitlines()
    blocks = []
    for node in tree.body:
        start = node.lineno - 1
        if node.decorator_list if hasattr(node, "decorator_list") else False:
            start = min(d.lineno for d in node.decorator_list) - 1
        text = "\n".join(lines[start:node.end_lineno])
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # a bare string: documentation
        blocks.append((_strip_docstrings(text), start + 1))
    return blocks


def _strip_docstrings(text: str) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str):
            for i in range(body[0].lineno - 1, body[0].end_lineno):
                lines[i] = ""
    return "\n".join(lines)


def normalise(code: Code) -> Code:
    for cell_id, source in code.cells.items():
        blocks = [(_tokens(text, first), cell_id) for text, first in _blocks(source)]
        blocks.sort(key=lambda block: " ".join(t for t, _ in block[0]))  # canonical order of statements
        for tokens, cell in blocks:
            code.tokens += [t for t, _ in tokens]
            code.origins += [(cell, line) for _, line in tokens]
    return code


def winnow(code: Code) -> Code:
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(code.tokens[i:i + K]).encode(), digest_size=8).digest(), "big")
              for i in range(len(code.tokens) - K + 1)]
    chosen = {}
    for start in range(max(0, len(hashes) - WINDOW + 1) or (1 if hashes else 0)):
        window = hashes[start:start + WINDOW]
        j = min(range(len(window)), key=lambda i: (window[i], -i))  # the rightmost minimum
        chosen[start + j] = hashes[start + j]
    for position, value in chosen.items():
        lines = sorted(set(code.origins[position:position + K]))
        code.fingerprints.setdefault(value, []).extend(lines)
    return code


@dataclass
class Pair:
    a: str
    b: str
    similarity: float
    shared: int
    lines_a: dict[str, set]   # cell -> matching line numbers
    lines_b: dict[str, set]


def compare(codes: list[Code], given: Code) -> list[Pair]:
    """Every pair of submissions that shares fingerprints beyond the given code, most similar first."""
    given_prints = set(given.fingerprints)
    usable = []
    for code in codes:
        for value in given_prints:
            code.fingerprints.pop(value, None)
        if len(code.fingerprints) >= MIN_FINGERPRINTS:
            usable.append(code)
    owners = defaultdict(list)
    for index, code in enumerate(usable):
        for value in code.fingerprints:
            owners[value].append(index)
    shared = defaultdict(int)
    for indices in owners.values():
        if len(indices) > len(usable) // 2 + 1 and len(usable) > 4:
            continue  # what most of the class writes (the obvious line) says nothing about copying
        for i, j in itertools.combinations(indices, 2):
            shared[(i, j)] += 1
    pairs = []
    for (i, j), count in shared.items():
        a, b = usable[i], usable[j]
        common = set(a.fingerprints) & set(b.fingerprints)
        pairs.append(Pair(a.student, b.student, count / min(len(a.fingerprints), len(b.fingerprints)), count,
                          _lines(a, common), _lines(b, common)))
    return sorted(pairs, key=lambda p: (-p.similarity, -p.shared))


def _lines(code: Code, common: set) -> dict[str, set]:
    out = defaultdict(set)
    for value in common:
        for cell, line in code.fingerprints[value]:
            out[cell].add(line)
    return out


def codes_of(submissions: dict[str, nbformat.NotebookNode], release) -> tuple[list[Code], Code]:
    """The normalised, fingerprinted solution code of each submission, and of the release."""
    ids = solution_ids(release)
    given = winnow(normalise(Code("(release)", solution_cells(release, ids))))
    codes = [winnow(normalise(Code(student, solution_cells(nb, ids)))) for student, nb in submissions.items()]
    return codes, given
