"""Each task of 05 graded on its own: a backward check builds its node with the forward op, which
for these checks is the grader's."""
import pytest

from course_tools.grading.reference import compute_substitutes


def lent_to(student, task: str) -> dict:
    if task == "maxpool_backward":
        return compute_substitutes(student, "MaxPool2d")
    if task == "avgpool_backward":
        return compute_substitutes(student, "AvgPool2d")
    return {}


@pytest.fixture(autouse=True)
def lend_the_other_tasks(student):
    student.lend = lambda task: lent_to(student, task)
    yield
    student.lend = None
