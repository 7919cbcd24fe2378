"""Each task of 02 graded on its own: the checks of every task but its own get the grader's
reduce_to_shape (backward_broadcast_to) and topological sort (topo_sort)."""
from course_tools.grading.api import reduce_to_shape_substitutes, topo_sort_substitutes


def lent_to(student, task: str) -> dict:
    lent = {}
    if task != "backward_broadcast_to":
        lent.update(reduce_to_shape_substitutes(student))
    if task != "topo_sort":
        lent.update(topo_sort_substitutes(student))
    return lent

