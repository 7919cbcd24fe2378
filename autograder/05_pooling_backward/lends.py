"""Each task of 05 graded on its own: a backward check builds its node with the forward op, and
both backward passes call the first-maximum mask (maxpool_mask) and col2im (pool_col2im); for
every other task's checks those are the grader's."""
from course_tools.grading.api import compute_substitutes


def lent_to(student, task: str) -> dict:
    if task == "maxpool_backward":
        return compute_substitutes(student, "MaxPool2d", "FirstMaxMask", "Col2Im")
    if task == "avgpool_backward":
        return compute_substitutes(student, "AvgPool2d", "Col2Im")
    return {}

