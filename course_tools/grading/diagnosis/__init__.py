"""Naming the mistake: misconception catalogues and the Diagnoser that matches a wrong value
to one (diagnosis.py), the calls a probe makes (probe_calls.py), the probes a student's own
`diagnose` runs (probes.py), and the reference pieces a suite substitutes into the student's
code (reference.py, torch_reference.py).

May import: views, assignment_folder, sandbox/worker's protocol and scenarios, course_lib;
never session/, suite/ or anything above them (session/ calls the Diagnoser).
"""
from .._moved import old_names

__getattr__ = old_names(__name__)  # `from course_tools.grading.diagnosis import Diagnoser`: one more release
