"""What the grading fork server imports once (pool.py): every child forked from it starts with
these loaded. Importing this module has no other effect."""
import nbformat  # noqa: F401
import numpy  # noqa: F401
import pytest  # noqa: F401
import torch  # noqa: F401
import torch.nn.functional  # noqa: F401

import course_lib  # noqa: F401
from course_tools.grading import diagnosis, reference, session, suite, views  # noqa: F401
from course_tools.grading.misconceptions import conv_backward  # noqa: F401
