"""Where the bundle's parts are: the checkout this package was imported from, and its folders.
One place, so that a file moving inside course_tools never changes what ``parents[n]`` means.

    ROOT        the bundle (this checkout)
    SOURCE      source/<id>/<id>.ipynb        the notebooks with their solutions (what instructors edit)
    RELEASE     assignments/<id>/             what students get, built from SOURCE
    SOLUTIONS   solutions/<id>/               the executed solutions, built from SOURCE
    SUITES      autograder/<id>/              the hidden suites, misconceptions and planted bugs
    LIBRARY     course_lib/                   the reference library, regions marked
    HUB         hub/                          the JupyterHub configuration and roster
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE, RELEASE, SOLUTIONS = ROOT / "source", ROOT / "assignments", ROOT / "solutions"
SUITES = ROOT / "autograder"
LIBRARY = ROOT / "course_lib"
HUB = ROOT / "hub"
