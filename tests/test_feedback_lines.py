"""The text under a graded cell in the feedback fits the page: the feedback shows it as
preformatted text, where a long line runs off sideways instead of wrapping (issue 22)."""
from __future__ import annotations

from course_tools.grading.nbgrader.plugin import HiddenSuiteGrader
from course_tools.grading.suite.run import FEEDBACK_WIDTH

# The demonstration cells of 04 that the grader does not run, as many as a notebook has.
NOT_RUN = [f"demo_training_run_{n}_with_a_long_descriptive_name" for n in range(8)]


def test_the_not_run_line_wraps_and_names_every_cell():
    graded = {"checks": [{"check": "conv backward matches finite differences", "passed": True}],
              "score": 8, "points": 8}
    outputs = HiddenSuiteGrader._outputs("conv_backward", graded, {"not_run": NOT_RUN}, 8.0)
    text = outputs[0]["text"]
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= FEEDBACK_WIDTH, [len(line) for line in lines]
    note = " ".join(line.strip() for line in lines[lines.index(next(l for l in lines if l.startswith("Not run"))):])
    assert all(name in note for name in NOT_RUN), note
    assert sum(line.startswith("Not run") for line in lines) == 1 and len(lines) > 3, text
