"""Grading outside the student's kernel.

    grader process (trusted)                    worker process (sandboxed, unprivileged)
    hidden pytest suite in autograder/<id>/     the submission's code cells, run in order
    reference values (course_lib, PyTorch)      the student-facing course_lib of <id>
    StudentSession.forward(...)          ---->  worker/scenarios.py: forward(...)
    compare, score per task             <----   values: JSON + raw array bytes (no pickle)
    grader-provided functions           <--->   callbacks (planted bugs, reference pieces)

The grader never imports student code and decides only from values it checks itself; the
worker sees an allow-list of the machine (runtime.py), never autograder/, solutions/, the
repository, the gradebook or other submissions. sandbox.py describes the isolation; session.py
what becomes a failed check and what a grading error.
"""
