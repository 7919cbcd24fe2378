"""Writing and running a hidden suite: the ``task`` marker and the check helpers a suite author
uses, ``run_suite`` (pytest over autograder/<id>/ against one StudentSession), the feedback text,
and ``python -m course_tools.grading.suite`` (grade one notebook from a shell).

May import: session/, diagnosis/, settings, assignment_folder, views, sandbox/, and course_tools
modules below grading (build, release_versions, demonstrations, terminal); never route, launch/,
api or nbgrader/ (they call this). Hidden suites import api, not this package.
"""
from .._moved import old_names

__getattr__ = old_names(__name__)  # `from course_tools.grading.suite import run_suite`: one more release
