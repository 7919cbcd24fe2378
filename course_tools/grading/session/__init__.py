"""The grader's side of a worker: ``StudentSession`` (starts the sandboxed worker, keeps its time
budget, answers its callbacks, checks strided views, and makes the calls a suite's checks make),
the framed channel to it, and the readers (expect.py) that every value from it passes through.

May import: diagnosis/, settings, views, sandbox/ (never the worker's modules except its
protocol), and course_tools modules below grading (build, demonstrations); never suite/,
results, target, route, launch/, api or nbgrader/.
"""
from .._moved import old_names

__getattr__ = old_names(__name__)  # `from course_tools.grading.session import StudentSession`: one more release
