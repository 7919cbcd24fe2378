"""The documentation site builds (warnings are errors: broken internal links and anchors fail it),
its reference pages cover the code, and the README stays one page that points into it."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

pytest.importorskip("sphinx")
pytest.importorskip("myst_parser")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs")
    run = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          "-d", str(out / "doctrees"), str(DOCS), str(out / "html")],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    return out / "html"


def test_the_site_builds_without_warnings_and_has_every_page(site):
    pages = {p.stem for p in DOCS.glob("*.md")}
    built = {p.stem for p in site.glob("*.html")}
    assert pages <= built, pages - built   # every page is in a toctree (else Sphinx warns, and -W fails)
    assert {"student-guide", "instructor-guide", "isolation", "threat-model", "hub"} <= pages


def test_the_commands_page_lists_every_command_and_option(site):
    from course_tools.cli import _parser

    page = (DOCS / "reference" / "commands.md").read_text()
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert f"## `course {name}`" in page, name
        for action in command._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in page, (name, option)
    assert "`--unsandboxed`" in page and "`--require`" in page  # course grade; course mutants' own parser


def test_the_environment_page_lists_every_variable_the_code_reads(site):
    page = (DOCS / "reference" / "environment.md").read_text()
    read = set()
    for path in [*ROOT.glob("course_*/**/*.py"), ROOT / "nbgrader_config.py"]:
        for line in path.read_text().splitlines():
            if "environ" in line or "getenv" in line:
                read |= set(re.findall(r"COURSE_[A-Z0-9_]+", line))
    assert len(read) > 10 and "COURSE_GRADER_MEMORY_MB" in read
    assert not {v for v in read if f"## `{v}`" not in page}


def test_the_readme_is_one_page_whose_links_lead_into_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme) < 6000, "the README is a front page; the rest belongs in docs/"
    assert "make demo" in readme and "make test" in readme
    targets = re.findall(r"\]\(([^)#]+)", readme)
    assert targets and all((ROOT / t).exists() for t in targets), [t for t in targets if not (ROOT / t).exists()]
