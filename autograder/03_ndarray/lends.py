"""Each task of 03 graded on its own: every NDArray the checks make needs compact_strides (a
task), slicing and setitem (pad, dilate, undilate, crop) need _slice_view (ndarray_getitem), the
ops need NDArray.flip and each other (dilate's gradient is undilate and back), so each task's
checks get the grader's version of the others."""
import numpy as np

from course_tools.grading.api import compute_substitutes, ndarray_method, slice_view


def compact_strides(shape):
    """Row-major strides in elements: each axis steps over the product of the sizes after it.
    (Written differently from the reference region, which the releases after 03 contain, so that
    the leak test does not take one for the other.)"""
    sizes = [int(n) for n in shape]
    return tuple(int(np.prod(sizes[i + 1:], dtype=np.int64)) for i in range(len(sizes)))


def lent_to(student, task: str) -> dict:
    lent = {}
    if task != "ndarray_compact_strides":
        lent.update(student.substitute("course_lib.nd:compact_strides", "function", compact_strides))
    if task != "ndarray_getitem":
        lent.update(student.substitute("course_lib.nd:NDArray._slice_view", "slice_view", slice_view))
    if task == "op_flip":
        lent.update(student.substitute("course_lib.nd:NDArray.flip", "ndarray_method", ndarray_method("flip")))
    if task == "op_dilate":
        lent.update(compute_substitutes(student, "UnDilate"))
    if task == "op_undilate":
        lent.update(compute_substitutes(student, "Dilate"))
    return lent

