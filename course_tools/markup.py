"""Student markup on the pages the course shows: an allow-list, never the student's own HTML.

A submission's written answers and outputs are rendered to HTML by nbconvert for three pages:
the feedback nbgrader writes (and the student fetches), and formgrader's view of a submission,
which runs in the grader service's origin with the TA's session. nbgrader's templates pass a
markdown cell through ``markdown2html`` and print the result as it is, so a written answer's
``<script>``, ``onerror=``, ``<iframe srcdoc>`` or ``javascript:`` link would run there.

nbgrader_config.py plugs in three pieces (formgrader builds its exporter from that config too):

    HTMLExporter.sanitize_html = True       nbconvert's own switch: no JavaScript or widget
                                            outputs, and ``clean_html`` on HTML outputs
    HTMLExporter.filters                    ``markdown2html`` -> SanitizedMarkdown (nbconvert's
                                            rendering, then the allow-list); ``clean_html`` ->
                                            clean_html below (nbconvert's default list is too
                                            narrow for notebooks: no headings, no tables' <th>)
    HTMLExporter.preprocessors              TemplateFieldsEscaped: what the templates print
                                            without escaping (grade ids, the student's name)

The allow-list keeps ordinary Markdown (headings, paragraphs, lists, tables, code with its
highlighting, emphasis, links over http(s)/mailto, images embedded as raster data: URLs, which is
how nbconvert renders a cell's attachments) and the TeX of math, which nbconvert leaves as text
for MathJax. Everything else is escaped, so the TA sees what the student wrote instead of running
it. Styles and foreign classes are dropped: a written answer must not be able to redraw the page
around it (a fake score, a button over formgrader's own).
"""
from __future__ import annotations

import html
import re

import bleach
from jinja2 import pass_context
from nbconvert.preprocessors import Preprocessor
from pygments.token import STANDARD_TYPES
from traitlets.config import LoggingConfigurable

HEADINGS = {f"h{level}" for level in range(1, 7)}
ALLOWED_TAGS = HEADINGS | {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details",
    "div", "dl", "dt", "em", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp",
    "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead",
    "tr", "u", "ul", "var",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
    "abbr": {"title"},
    **{heading: {"id"} for heading in HEADINGS},   # nbconvert's anchors for the headings
}
# The classes nbconvert's own rendering writes: Pygments' token classes in highlighted code, its
# code block and anchor link classes, pandas' table class; nothing of the page's own styles.
_CLASSES = {name for name in STANDARD_TYPES.values() if name} | {"highlight", "hll", "anchor-link", "dataframe"}
_CODE_LANGUAGE = re.compile(r"language-[\w+#.-]{1,40}")
# Images only as data the page carries (a cell's attachments): a src elsewhere would be a request
# made from the reader's browser (a tracking pixel, or a GET in formgrader's origin).
_RASTER_DATA = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[a-z0-9+/=]*")
_DIMENSION = re.compile(r"\d{1,4}%?")
_PROTOCOLS = {"http", "https", "mailto", "data"}   # data: only where _allowed_attribute says


def _normalized_uri(value: str) -> str:
    """A URL the way bleach compares its scheme: entities decoded, whitespace, backticks, control
    and non-ASCII characters removed (browsers ignore them inside a scheme), lower case."""
    value = re.sub(r"[`\x00-\x20\x7f-\xa0\s]+", "", html.unescape(value))
    return re.sub(r"[^\x00-\x7f]", "", value).lower()


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    if name == "class":
        return all(token in _CLASSES or _CODE_LANGUAGE.fullmatch(token) for token in value.split())
    if name not in _ATTRIBUTES.get(tag, ()):
        return False
    if tag == "img" and name == "src":
        return _RASTER_DATA.fullmatch(_normalized_uri(value)) is not None
    if name == "href":
        return not _normalized_uri(value).startswith("data:")
    if name in ("width", "height"):
        return _DIMENSION.fullmatch(value.strip()) is not None
    return True


_CLEANER = bleach.Cleaner(tags=ALLOWED_TAGS, attributes=_allowed_attribute, protocols=_PROTOCOLS,
                          strip=False, strip_comments=True)


def clean_html(text) -> str:
    """``text`` (HTML from a submission, or rendered from its Markdown) with only the allow-list's
    tags, attributes and URLs; anything else is escaped, so it shows as text and never runs."""
    text = text.decode() if isinstance(text, bytes) else str(text)
    return _CLEANER.clean(text)


class SanitizedMarkdown(LoggingConfigurable):
    """nbconvert's ``markdown2html`` filter (math, attachments, highlighting, heading anchors as
    the exporter is configured), its HTML then through clean_html.

    Registered as a filter class, nbconvert constructs it with the exporter as its parent."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        pass_context(self)  # Jinja hands __call__ the template's context (the cell, for its attachments)

    def __call__(self, context, source: str) -> str:
        return clean_html(self.parent.markdown2html(context, source))


class TemplateFieldsEscaped(Preprocessor):
    """Escape what nbgrader's feedback and formgrade templates print without escaping, before
    they render: grade ids (a student can add a cell with nbgrader metadata of their own), the
    student's id and name, and output metadata that lands in unquoted attributes or frames.

    Runs on the exporter's copy of the notebook; the autograded notebook is untouched."""

    RESOURCE_FIELDS = ("student", "first_name", "last_name", "notebook_path", "notebook_id", "assignment_id")

    def preprocess(self, nb, resources):
        for field in self.RESOURCE_FIELDS:
            if isinstance(resources.get(field), str):
                resources[field] = html.escape(resources[field])
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and "grade_id" in meta:
            meta["grade_id"] = html.escape(str(meta["grade_id"]))
        if "execution_count" in cell and not isinstance(cell.execution_count, int):
            cell.execution_count = None
        for output in cell.get("outputs", []):
            if "execution_count" in output and not isinstance(output.execution_count, int):
                output.execution_count = None
            if "metadata" in output:
                output.metadata = _safe_output_metadata(output.metadata)
        return cell, resources


def _safe_output_metadata(metadata) -> dict:
    """An output's display metadata reduced to numbers for width and height: the templates write
    them into unquoted attributes, and other keys (``filenames``, ``isolated``) make the page load
    a URL or frame the output."""
    safe = {}
    for mime, values in (metadata or {}).items():
        if isinstance(values, dict):
            kept = {key: values[key] for key in ("width", "height")
                    if isinstance(values.get(key), (int, float)) and not isinstance(values.get(key), bool)}
            if kept:
                safe[mime] = kept
    return safe
