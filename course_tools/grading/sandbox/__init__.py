"""What runs student code: the bubblewrap sandbox and its job folder (bwrap.py), what a
submission may use (limits.py), the cgroup that counts and caps a submission's processes
(cgroups.py), the machine's allow-list for the worker (runtime.py), and the worker itself
(worker/: copied into each job and run inside the sandbox).

The bottom of grading: may import nothing of course_tools.grading above it, and worker/ imports
nothing of course_tools at all (it runs where course_tools is not).
"""
from .._moved import old_names

__getattr__ = old_names(__name__)  # `from course_tools.grading.sandbox import Limits`: one more release
