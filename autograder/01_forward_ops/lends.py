"""Each task of 01 graded on its own: NDArray.sum, summation and transpose read their axes through
normalize_axes (a task of its own), so the checks of every other task get the grader's version,
in course_lib and under the notebook's own name."""
from course_lib import nd


def lent_to(student, task: str) -> dict:
    if task == "normalize_axes":
        return {}
    return {**student.substitute("course_lib.nd:normalize_axes", "function", nd.normalize_axes),
            **student.substitute("student:normalize_axes", "function", nd.normalize_axes)}

