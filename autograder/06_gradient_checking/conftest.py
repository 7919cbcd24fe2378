"""Each task of 06 graded on its own: the planted-bug checks use central_difference (the task
gradient_check), so they get the reference one, lent as code for those calls only. The file
order puts every gradient_check check before them: a copy the notebook might keep comes too
late to earn gradient_check anything."""
import pytest

from course_lib.gradcheck import central_difference
from course_tools.grading.reference import source_substitutes


def lent_to(student, task: str) -> dict:
    if task == "planted_bug_checks":
        return source_substitutes(["course_lib.gradcheck:central_difference", "student:central_difference"],
                                  central_difference)
    return {}


@pytest.fixture(autouse=True)
def lend_the_other_tasks(student):
    student.lend = lambda task: lent_to(student, task)
    yield
    student.lend = None
