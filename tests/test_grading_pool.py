"""`course grade`'s fork server (course_tools/grading/launch/pool.py): children forked from it grade
whatever the hidden suite asks of PyTorch.

The server preloads the diagnoser, whose probes run torch's conv at import. Had that started
PyTorch's OpenMP threads in the server, every child's first parallel torch op (the softmax
loss of 02's hidden suite, whose suite keeps torch's default threads) would hang until the
time limit killed it: a grading error for every submission of that assignment.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from course_tools.grading.launch.pool import grade_many
from course_tools.grading.settings import GradingSettings
from course_tools.grading.suite.run import graded_tasks
from course_tools.build import release_notebook

ROOT = Path(__file__).resolve().parents[1]


def test_a_forked_grading_runs_torch_with_its_default_threads_to_full_marks():
    assignment = "02_backward_ops"
    solution = ROOT / "source" / assignment / f"{assignment}.ipynb"
    [(tag, result)] = list(grade_many([("solution", assignment, solution)], workers=1,
                                        settings=GradingSettings.current(notebook_seconds=60)))
    assert tag == "solution"
    assert result["grading_error"] is None, result["grading_error"]
    points = graded_tasks(release_notebook(assignment))
    assert {task: graded["score"] for task, graded in result["tasks"].items()} == points


def test_the_fork_server_has_no_torch_threads_to_hand_down():
    """What the children inherit: the server's preload leaves PyTorch at one thread."""
    probe = ("import os, torch; import course_tools.grading.launch.preload; "
             "print(torch.get_num_threads(), len(os.listdir('/proc/self/task')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    torch_threads, os_threads = map(int, out.stdout.split())
    assert torch_threads == 1
    # The main thread, plus at most OpenBLAS's pool (which re-creates itself after a fork).
    assert os_threads <= 2, f"{os_threads} threads in the fork server after its preload"
