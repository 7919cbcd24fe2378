"""``python -m course_tools.grading.suite ASSIGNMENT NOTEBOOK [--json OUT] [--settings JSON]``: grade
one notebook through the one route (route.grade_one) in a process of its own, as runner.py's
launchers do. Exit status 3 when the grader itself failed (a grading error).

The shell's way in, so it sits above route although it lives in suite/ (where its command has
always been): the import-linter contract names this one arrow up (pyproject.toml).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ...terminal import printable
from ..route import grade_one
from ..settings import GradingSettings
from .run import cap_grader_memory, feedback_text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade one notebook with its assignment's hidden suite. Exit "
                                                 "status 3 when the grader itself failed (a grading error).")
    parser.add_argument("assignment")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--release", type=Path, default=None, help="the release notebook (default: assignments/)")
    parser.add_argument("--suite", type=Path, default=None, help="the hidden suite's folder (default: autograder/<id>)")
    parser.add_argument("--json", type=Path, default=None, help="write the result here")
    parser.add_argument("--settings", type=json.loads, default=None,
                        help="the grading settings as JSON (settings.py; default: the environment's)")
    args = parser.parse_args(argv)
    cap_grader_memory()
    settings = GradingSettings.from_dict(args.settings) if args.settings else GradingSettings.current()
    result = grade_one(args.assignment, args.notebook, settings, args.release, suite_dir=args.suite)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    elif not result["grading_error"]:
        # The checks' messages carry the submission's own text (its errors, its values).
        for task_id, graded in result["tasks"].items():
            sys.stdout.write(printable(feedback_text(task_id, graded)))
    if result["grading_error"]:
        print(printable(f"grading error: {result['grading_error']}"), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
