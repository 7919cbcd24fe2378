"""Math in the HTML pages nbgrader renders (formgrader's grading page, the feedback), typeset by
the MathJax that the Jupyter server showing them serves, never one from a CDN (a hub often has
no internet). The copy is the Python package jupyter-server-mathjax (a dependency of the course,
so in every environment: the students', the graders', a self-paced learner's), which serves
MathJax 2.7 as a server extension; the template folder here replaces nbconvert's mathjax() macro
with one that loads it (nbconvert_templates/base/mathjax.html.j2).
"""
from __future__ import annotations

from pathlib import Path

# nbconvert searches each template's folders in the order of HTMLExporter.extra_template_basedirs,
# before its own: base/mathjax.html.j2 here comes before nbconvert's base/mathjax.html.j2.
TEMPLATES = Path(__file__).resolve().parent / "nbconvert_templates"


def nbgrader_templates() -> Path:
    """nbgrader's own templates (feedback, formgrade), which GenerateFeedback uses unless
    extra_template_basedirs is configured: configured, they have to be named too."""
    import nbgrader

    return Path(nbgrader.__file__).resolve().parent / "server_extensions" / "formgrader" / "templates"


def template_basedirs() -> list[str]:
    """HTMLExporter.extra_template_basedirs for nbgrader's pages with the course's MathJax."""
    return [str(TEMPLATES), str(nbgrader_templates())]


def with_local_mathjax(exporter) -> None:
    """Put the course's mathjax() macro first on ``exporter``'s template path: formgrader makes
    its exporter with extra_template_basedirs of its own, over the configured ones, and an
    exporter works out its template path once, so the macro's folder goes in front of it."""
    folder = str(TEMPLATES / "base")
    if folder not in exporter.template_paths:
        exporter.template_paths = [folder, *exporter.template_paths]
