"""Everything an assignment's folder under autograder/ may use from the grader, in one place: its
hidden suite (test_*.py), what it lends (lends.py) and its misconceptions (misconceptions.py).
The rest of course_tools/grading is the machinery that runs them; a test in
tests/test_repository.py holds autograder/ to this module.

Hidden checks (suite.py, expect.py, session.py)
    task, expect_close, expect_worked, worked_answer      a test's task, and its comparisons
    notebook_value                                      a variable the notebook left, unread
    as_array, as_float, as_int, as_list, as_mapping, as_numbers, describe
                                                         a student's value read as what it should be
    StudentError, current_session                         a failure in the student's code; the session
Lending the other tasks (reference.py, views.py)
    compute_substitutes, gradient_substitutes, calls_back_substitutes, reduce_to_shape_substitutes,
    topo_sort_substitutes, ndarray_method, slice_view, op_gradient, view_of
PyTorch, the oracle, in the course's layouts (torch_reference.py)
    nchw, nhwc, oihw, hwio, torch_conv_nchw, torch_conv_nhwc
Misconceptions and probes (diagnosis.py, probe_calls.py, worker/)
    Misconception, Call, notebook_place, Probe, the *_call builders and *_of readers, in_dtype,
    FUNCTIONS, EXPRESSIONS (the worker's scenario functions), StridedView
An assignment's own modules (assignment_folder.py)
    assignment_module
"""
from .assignment_folder import assignment_module
from .diagnosis.diagnosis import Call, Misconception, notebook_place
from .session.expect import as_array, as_float, as_int, as_list, as_mapping, as_numbers, describe
from .diagnosis.probe_calls import (Probe, call_of, forward_call, forward_of, function_call, gradient_call, gradient_of,
                          in_dtype, reevaluated_gradient_of, request_call, request_of)
from .diagnosis.reference import (calls_back_substitutes, compute_substitutes, gradient_substitutes, ndarray_method,
                        op_gradient, reduce_to_shape_substitutes, slice_view, topo_sort_substitutes)
from .session.session import StudentError, current_session
from .suite.run import expect_close, expect_worked, notebook_value, task, worked_answer
from .diagnosis.torch_reference import hwio, nchw, nhwc, oihw, torch_conv_nchw, torch_conv_nhwc
from .views import view_of
from .sandbox.worker.protocol import StridedView
from .sandbox.worker.scenarios import EXPRESSIONS, FUNCTIONS

__all__ = [
    "assignment_module",
    "Call", "Misconception", "notebook_place",
    "as_array", "as_float", "as_int", "as_list", "as_mapping", "as_numbers", "describe",
    "Probe", "call_of", "forward_call", "forward_of", "function_call", "gradient_call", "gradient_of", "in_dtype",
    "reevaluated_gradient_of", "request_call", "request_of",
    "calls_back_substitutes", "compute_substitutes", "gradient_substitutes", "ndarray_method", "op_gradient",
    "reduce_to_shape_substitutes", "slice_view", "topo_sort_substitutes",
    "StudentError", "current_session",
    "expect_close", "expect_worked", "notebook_value", "task", "worked_answer",
    "hwio", "nchw", "nhwc", "oihw", "torch_conv_nchw", "torch_conv_nhwc",
    "view_of", "StridedView", "EXPRESSIONS", "FUNCTIONS",
]
