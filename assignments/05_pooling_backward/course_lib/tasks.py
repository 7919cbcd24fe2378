# Generated from course_lib/tasks.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""The course's assignments and their task ids.

A task id is the same string everywhere: the ``### BEGIN SOLUTION <task id>`` region in
course_lib, the nbgrader ``grade_id`` of the notebook cell, and the hidden test's name.
The release build of assignment k keeps the reference code of the tasks of assignments
before k and replaces the regions of k and later by a stub that raises NotImplementedError.

``LIBRARY_TASKS`` are implemented inside course_lib (they have solution regions here);
``NOTEBOOK_TASKS`` live only in the notebooks (written answers, numeric answers, experiments).
"""
from __future__ import annotations

ASSIGNMENTS: dict[str, str] = {
    "01_forward_ops": "Forward ops",
    "02_backward_ops": "Backward ops",
    "03_ndarray": "NDArray: strides, flip and dilate",
    "04_conv_backward": "Convolution backward",
    "05_pooling_backward": "Pooling backward",
    "06_gradient_checking": "Gradient checking",
    "07_experiments": "Experiments: implementations, pooling, precision",
}

_OPS_1 = ["power_scalar", "divide", "divide_scalar", "matmul", "summation", "broadcast_to",
          "reshape", "negate", "transpose", "log", "exp", "relu", "power"]

LIBRARY_TASKS: dict[str, list[str]] = {
    "01_forward_ops": ["normalize_axes", "transpose_permutation"] + [f"forward_{op}" for op in _OPS_1],
    "02_backward_ops": [f"backward_{op}" for op in _OPS_1] + ["topo_sort", "reverse_mode", "softmax_loss"],
    "03_ndarray": ["ndarray_compact_strides", "ndarray_permute", "ndarray_broadcast_to",
                   "ndarray_getitem", "ndarray_flip", "ndarray_pad", "op_flip", "op_dilate", "op_undilate"],
    "04_conv_backward": ["conv_naive_backward", "conv_im2col_forward", "conv_backward", "nn_conv"],
    "05_pooling_backward": ["maxpool_forward", "maxpool_mask", "pool_col2im", "maxpool_backward", "avgpool_forward",
                            "avgpool_backward"],
    "06_gradient_checking": ["gradient_check"],
    "07_experiments": ["loss_scaler"],
}

NOTEBOOK_TASKS: dict[str, list[str]] = {
    "01_forward_ops": [],
    "02_backward_ops": ["broadcast_adjoint", "summation_adjoint", "matmul_adjoint", "reverse_by_hand"],
    "03_ndarray": ["adjoint_check"],
    "04_conv_backward": ["conv_derivation", "conv_worked_example", "conv_find_bugs", "conv_fixed_backward"],
    "05_pooling_backward": ["pooling_worked_example", "pooling_ties_answer"],
    "06_gradient_checking": ["taylor_argument", "best_step_size", "planted_bug_checks"],
    "07_experiments": ["cost_model", "im2col_memory", "experiment_implementations", "implementations_conclusion",
                       "experiment_pooling", "seeds_for_power", "pooling_conclusion", "experiment_precision",
                       "precision_conclusion"],
}


def assignment_of(task_id: str) -> str:
    """The assignment that teaches ``task_id``; KeyError naming the id if unknown."""
    for assignment, tasks in {**LIBRARY_TASKS}.items():
        if task_id in tasks or task_id in NOTEBOOK_TASKS[assignment]:
            return assignment
    raise KeyError(f"unknown task id {task_id!r}")


def tasks_released_with(assignment: str) -> set[str]:
    """Library tasks whose reference code students of ``assignment`` may see (earlier ones)."""
    order = list(ASSIGNMENTS)
    if assignment not in ASSIGNMENTS:
        raise KeyError(f"unknown assignment {assignment!r}; known: {', '.join(order)}")
    earlier = order[: order.index(assignment)]
    return {t for a in earlier for t in LIBRARY_TASKS[a]}
