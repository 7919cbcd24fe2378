"""Each task of 01 graded on its own: NDArray.sum, summation and transpose read their axes through
normalize_axes, and transpose its order of axes through transpose_permutation (tasks of their own),
so the checks of every other task get the grader's versions, in course_lib and, for normalize_axes,
under the notebook's own name too."""
from course_lib import nd
from course_lib.ops import shaping


def lent_to(student, task: str) -> dict:
    lent = {}
    if task != "normalize_axes":
        lent.update(student.substitute("course_lib.nd:normalize_axes", "function", nd.normalize_axes))
        lent.update(student.substitute("student:normalize_axes", "function", nd.normalize_axes))
    if task != "transpose_permutation":
        lent.update(student.substitute("course_lib.ops.shaping:transpose_permutation", "function",
                                       shaping.transpose_permutation))
        lent.update(student.substitute("student:transpose_permutation", "function", shaping.transpose_permutation))
    return lent
