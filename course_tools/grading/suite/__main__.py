"""``python -m course_tools.grading.suite ASSIGNMENT NOTEBOOK [--json OUT]``: grade one notebook."""
import sys

from .run import main

sys.exit(main())
