"""Numbers that an executed solution's written text cites, checked against what the notebook computed.

A model answer (an nbgrader solution cell in markdown, up to its mark scheme) that comes after a
measured table, and the prose right after a measured table (the first markdown cell after a code cell whose output is a table) may cite
a number only if the run itself produced it. Numbers typed into the source disagree with the tables
as soon as the solution is rebuilt on another machine, or the same machine under load.

    uncomputed_citations(nb) -> [Citation(cell, text, why), ...]   # empty: every citation is backed

A cited number is *backed* when

* a number in the notebook's outputs (streams, text, markdown, HTML) rounds to it: a cited x with d
  decimals matches a computed y when |x - y| <= 0.5 * 10**-d (the stated rounding tolerance). An
  explicit sign (+0.09) must agree; an unsigned number matches either sign. A bare power of ten
  (10^{-17}) states an order of magnitude and matches any y with floor(log10 |y|) equal to it;
* or the allow-rule lets it through (``ALLOWED``): integers up to 12 in size (counts, "2 points",
  "Part 0"), years, and constants of the task text (numbers in the notebook's own code and in its
  markdown cells that are not checked, such as 65504 or the 2.3 of a question).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

SMALL_INTEGER = 12
YEARS = range(1900, 2101)

# One number: a power (2^{16}, 10^{-17}), or a mantissa with optional thousands separators, decimals,
# and a scientific exponent (1.1e-16, 2.2\cdot10^{-16}, 3 × 10^5). It starts at no word character,
# dot or caret (so float16 and the 16 of 2^16 are not numbers) and ends at none, except a times sign
# "x" (88x).
_NUMBER = re.compile(r"""
    (?<![\w.^{])
    (?P<sign>(?<![\w)\]])[+\-\u2212])?
    (?:
        (?P<base>2|10)\s*\^\s*\{?\s*(?P<power>[+\-\u2212]?\d+)\s*\}?
      |
        (?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?
        (?:\s*(?:\\cdot|\\times|\u00d7|\u00b7)\s*10\s*\^\s*\{?\s*(?P<exp10>[+\-\u2212]?\d+)\s*\}?
          |e(?P<exp>[+\-]?\d+))?
    )
    (?=x\b|[^\w^]|$)
""", re.VERBOSE)
_LATEX_SPACES = re.compile(r"\\[,;:! ]|\\quad")


@dataclass(frozen=True)
class Number:
    value: float
    decimals: int          # decimals of the mantissa as written (the rounding tolerance)
    signed: bool           # written with an explicit + or -
    magnitude_only: bool   # a bare power of ten: an order of magnitude
    text: str


@dataclass(frozen=True)
class Citation:
    cell: int
    text: str
    why: str

    def __str__(self):
        return f"cell {self.cell}: {self.text!r} ({self.why})"


def _int(text: str) -> int:
    return int(text.replace("\u2212", "-"))


def numbers(text: str) -> list[Number]:
    """Every number written in ``text`` (markdown with LaTeX, or plain output)."""
    text = _LATEX_SPACES.sub(" ", text)
    found = []
    for m in _NUMBER.finditer(text):
        sign = -1.0 if m["sign"] in ("-", "\u2212") else 1.0
        if m["base"]:
            power = _int(m["power"])
            value = float(m["base"]) ** power if abs(power) < 300 else math.inf
            decimals, magnitude_only = 0, m["base"] == "10"
        else:
            mantissa = float(m["int"].replace(",", "") + ("." + m["frac"] if m["frac"] else ""))
            exponent = _int(m["exp10"] or m["exp"] or "0")
            value, decimals, magnitude_only = mantissa * 10.0 ** exponent, len(m["frac"] or "") - exponent, False
        found.append(Number(sign * value, decimals, bool(m["sign"]), magnitude_only, m.group(0)))
    return found


def matches(cited: Number, computed: Number) -> bool:
    """Whether the computed number, rounded as the citation is written, is the cited one."""
    x, y = cited.value, computed.value
    if not cited.signed:
        x, y = abs(x), abs(y)
    if not (math.isfinite(x) and math.isfinite(y)):
        return x == y
    if cited.magnitude_only:
        return y != 0 and math.copysign(1, x) == math.copysign(1, y) and \
            math.floor(math.log10(abs(y)) + 1e-12) == round(math.log10(abs(x)))
    return abs(x - y) <= 0.5 * 10.0 ** -cited.decimals * (1 + 1e-9) + 1e-300


def allowed(cited: Number, constants: list[Number]) -> bool:
    """The allow-rule: small integers, years, and constants of the task text."""
    if not cited.magnitude_only and cited.value == int(cited.value) and cited.decimals <= 0:
        if abs(cited.value) <= SMALL_INTEGER or int(cited.value) in YEARS:
            return True
    return any(matches(cited, c) for c in constants)


def _output_text(output) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return ""
    data = output.get("data", {})
    return "\n".join(str(data[k]) for k in ("text/markdown", "text/html", "text/plain") if k in data)


def _is_table(output) -> bool:
    data = output.get("data", {})
    return "| --- |" in str(data.get("text/markdown", "")) or "<table" in str(data.get("text/html", ""))


def _model_answer(source: str) -> str:
    """A solution cell's model answer: its text before the mark scheme."""
    return re.split(r"\*\*Mark scheme", source, maxsplit=1)[0]


def checked_texts(nb) -> dict[int, str]:
    """{cell index: text} of the written text whose numbers must be backed: the model answers that
    come after a measured table (those that discuss a run; a derivation before any measurement, as in
    04-06, cites mathematics, not a run), and the first markdown cell after each measured table."""
    checked, measured = {}, False
    for i, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution") and measured:
            checked[i] = _model_answer(cell.source)
        if cell.cell_type == "code" and any(_is_table(o) for o in cell.get("outputs", [])):
            measured = True
            after = next((j for j in range(i + 1, len(nb.cells)) if nb.cells[j].cell_type == "markdown"), None)
            if after is not None and not nb.cells[after].metadata.get("nbgrader", {}).get("solution"):
                checked[after] = nb.cells[after].source
    return checked


def uncomputed_citations(nb) -> list[Citation]:
    """The numbers of the checked text that the notebook's own outputs do not back."""
    checked = checked_texts(nb)
    computed = [n for cell in nb.cells if cell.cell_type == "code"
                for o in cell.get("outputs", []) for n in numbers(_output_text(o))]
    constants = [n for i, cell in enumerate(nb.cells) if i not in checked and not
                 (cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"))
                 for n in numbers(cell.source)]
    problems = []
    for i, text in checked.items():
        for cited in numbers(text):
            if not allowed(cited, constants) and not any(matches(cited, c) for c in computed):
                problems.append(Citation(i, cited.text, "no output of the notebook rounds to it"))
    return problems
