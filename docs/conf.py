"""Sphinx + MyST configuration of the bundle's documentation (`make docs`, tests/test_docs.py)."""
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]  # the bundle (for the reference pages) and the extension

project = "Deep-learning systems, built by hand"
author = "the course's instructors"
extensions = ["myst_parser", "course_reference"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]
myst_heading_anchors = 3          # [text](page.md#a-heading) links are checked, anchors included
myst_enable_extensions = ["colon_fence"]
html_theme = "alabaster"
html_title = project
