"""Each task of 06 graded on its own: the planted-bug checks use central_difference (the task
gradient_check), so they get the reference one for those calls only. It runs here, in the grader:
the worker's stand-in sends it the arguments, and it asks the worker for f's value at each point it
probes (reference.calls_back_substitutes). Its code never reaches the student's process."""
from course_lib.gradcheck import central_difference
from course_tools.grading.api import calls_back_substitutes


def lent_to(student, task: str) -> dict:
    if task == "planted_bug_checks":
        return calls_back_substitutes(student, ["course_lib.gradcheck:central_difference",
                                                "student:central_difference"], central_difference)
    return {}

