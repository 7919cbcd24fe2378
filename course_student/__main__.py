"""python -m course_student: the student-only `course` command."""
import sys

from .cli import main

sys.exit(main())
