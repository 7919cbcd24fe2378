"""The sandboxed side of grading: the code the worker process runs.

This package is self-contained (it imports nothing else of course_tools): the grader copies
its files into each job's read-only folder, and the worker imports them from there, next to
the student-facing course_lib of the release being graded. See ../bwrap.py.
"""
