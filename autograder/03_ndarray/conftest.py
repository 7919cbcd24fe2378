"""Each task of 03 graded on its own: every NDArray the checks make needs compact_strides (a
task), slicing and setitem (pad, dilate, undilate, crop) need _slice_view (ndarray_getitem), the
ops need NDArray.flip and each other (dilate's gradient is undilate and back), so each task's
checks get the grader's version of the others."""
import pytest

from course_tools.grading.reference import compute_substitutes, ndarray_method, slice_view


def compact_strides(shape):
    strides, step = [], 1
    for n in reversed(list(shape)):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


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


@pytest.fixture(autouse=True)
def lend_the_other_tasks(student):
    student.lend = lambda task: lent_to(student, task)
    yield
    student.lend = None
