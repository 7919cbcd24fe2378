"""Grading outside the student's kernel.

    grader process (trusted)                    worker process (sandboxed)
    hidden pytest suite in autograder/<id>/     the submission's code cells, run in order
    reference values (course_lib, PyTorch)      the student-facing course_lib of <id>
    StudentSession.call("forward", ...)  ---->  scenarios.forward(...)
    compare, score per task             <----   arrays as .npy (no pickle) + JSON

The grader never imports student code; the worker never sees autograder/, solutions/, the
gradebook or other submissions. See sandbox.py for the isolation and its fallback.
"""
