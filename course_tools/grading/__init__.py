"""Grading outside the student's kernel.

    grader process (trusted)                    worker process (sandboxed, unprivileged)
    hidden pytest suite in autograder/<id>/     the submission's code cells, run in order
    reference values (course_lib, PyTorch)      the student-facing course_lib of <id>
    StudentSession.forward(...)          ---->  sandbox/worker/scenarios.py: forward(...)
    compare, score per task             <----   values: JSON + raw array bytes (no pickle)
    grader-provided functions           <--->   callbacks (planted bugs, reference pieces)

The grader never imports student code and decides only from values it checks itself; the
worker sees an allow-list of the machine (sandbox/runtime.py), never autograder/, solutions/,
the repository, the gradebook or other submissions. sandbox/bwrap.py describes the isolation;
session/session.py what becomes a failed check and what a grading error.

The rooms, from the top (each may import only what is below it; the import-linter contract in
pyproject.toml is the checked form of this list):

    nbgrader/    nbgrader's side: the autograde plugin, restoring deleted graded cells
    api.py       what a hidden suite imports (autograder/<id>/test_*.py, misconceptions.py)
    launch/      where gradings run: fork-server pool, fresh subprocess, Dask fan-out
    route.py     the one route: grade_one(assignment, notebook, settings) -> result
    suite/       writing and running a hidden suite (task marker, checks, run_suite, feedback)
    results.py   the result store and its keys    target.py   which release version a notebook is graded against
    session/     the grader's side of a worker: StudentSession, its channel, the value readers
    diagnosis/   naming the mistake: misconception catalogues, probes, reference pieces
    settings.py  GradingSettings    assignment_folder.py  autograder/<id>/    views.py  strided views
    release.py   the release notebook, parsed once per grading
    sandbox/     what runs student code: bubblewrap, cgroups, the machine's allow-list, the worker

Old dotted paths (``course_tools.grading.nbgrader_plugin``, ``...grading.pool``) import, with a
DeprecationWarning, for one more release (_moved.py).
"""
from . import _moved

_moved.install()
