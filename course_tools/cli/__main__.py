"""python -m course_tools.cli"""
import sys

from . import main

sys.exit(main())
