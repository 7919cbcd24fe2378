"""What the grading fork server imports once (pool.py): every child forked from it starts with
these loaded, and with the sandbox's view of the installed packages worked out (it reads every
package's file list: a noticeable part of a second, once per `course grade` instead of once
per notebook). Importing this module has no other effect on the grading.

PyTorch is set to one thread before anything runs an op (the diagnoser's probes run torch's
conv at import): GNU OpenMP is not fork-safe, and a child forked from a server whose OpenMP
threads have started hangs in its first parallel op. One thread per grading process is also
what `course grade --workers N` wants: N processes side by side, one core each.
"""
import torch

torch.set_num_threads(1)

import nbformat  # noqa: E402,F401
import numpy  # noqa: E402,F401
import pytest  # noqa: E402,F401
import torch.nn.functional  # noqa: E402,F401

import course_lib  # noqa: E402,F401
from course_tools.grading import views  # noqa: E402,F401
from course_tools.grading.diagnosis import diagnosis, reference  # noqa: E402,F401
from course_tools.grading.sandbox import runtime  # noqa: E402
from course_tools.grading.session import session  # noqa: E402,F401
from course_tools.grading.suite import run  # noqa: E402,F401
from course_tools.grading.assignment_folder import assignment_module  # noqa: E402

assignment_module("04_conv_backward", "misconceptions")  # its import runs torch's conv
runtime.runtime_view()
