"""Solution regions and the student-facing course_lib of each release."""
import subprocess
import sys

import pytest

from course_lib import tasks
from course_tools.regions import (RegionError, find_regions, library_regions, notebook_region_bodies,
                                  strip_regions)
from course_tools.student_lib import build_student_lib

TEXT = """def f(x):
    y = 1
    ### BEGIN SOLUTION task_a
    return x + y
    ### END SOLUTION task_a

def g(x):
    ### BEGIN SOLUTION task_b
    z = x * 2
    return z
    ### END SOLUTION task_b
"""


def test_strip_replaces_chosen_regions_and_unwraps_the_others():
    out = strip_regions(TEXT, {"task_b"}, lambda t: "02_x")
    assert "return x + y" in out and "### BEGIN" not in out
    assert "z = x * 2" not in out
    assert '    raise NotImplementedError("task_b: not implemented yet; you write it in assignment 02_x")' in out
    namespace = {}
    exec(out, namespace)
    assert namespace["f"](1) == 2
    with pytest.raises(NotImplementedError, match="task_b"):
        namespace["g"](1)


def test_a_fallback_replaces_its_region_only_where_asked():
    text = TEXT.replace("    ### END SOLUTION task_b\n", "    ### END SOLUTION task_b\n    ### FALLBACK task_b: return x + x\n")
    (region,) = [r for r in find_regions(text) if r.task == "task_b"]
    assert region.fallback == "return x + x"
    with_fallback = strip_regions(text, {"task_b"}, lambda t: "02_x", use_fallback={"task_b"})
    namespace = {}
    exec(with_fallback, namespace)
    assert namespace["g"](3) == 6 and "FALLBACK" not in with_fallback and "x * 2" not in with_fallback
    stubbed = strip_regions(text, {"task_b"}, lambda t: "02_x")
    assert "NotImplementedError" in stubbed and "FALLBACK" not in stubbed and "x + x" not in stubbed
    kept = strip_regions(text, set(), lambda t: "02_x")
    assert "z = x * 2" in kept and "FALLBACK" not in kept


@pytest.mark.parametrize("bad,message", [
    ("### BEGIN SOLUTION a\n", "never closed"),
    ("### END SOLUTION a\n", "without a matching BEGIN"),
    ("### BEGIN SOLUTION a\n### BEGIN SOLUTION b\n", "inside the region"),
    ("### BEGIN SOLUTION a\n### END SOLUTION b\n", "without a matching BEGIN"),
    ("    ### BEGIN SOLUTION\n", "needs a task id"),
])
def test_malformed_markers_are_reported_with_their_line(bad, message):
    with pytest.raises(RegionError, match=message):
        find_regions(bad, "file.py")


def test_notebook_regions_are_dedented_bodies():
    cell = "@implements(X, 'f')\ndef f(self):\n    ### BEGIN SOLUTION\n    if a:\n        b()\n    ### END SOLUTION\n"
    assert notebook_region_bodies(cell) == ["if a:\n    b()"]


def test_every_library_task_has_regions_and_every_region_a_known_task():
    regions = library_regions()
    known = {t for ts in tasks.LIBRARY_TASKS.values() for t in ts}
    assert set(regions) == known


@pytest.mark.parametrize("assignment", list(tasks.ASSIGNMENTS))
def test_student_lib_keeps_earlier_tasks_and_stubs_the_rest(assignment, tmp_path):
    build_student_lib(assignment, tmp_path / "course_lib")
    text = "\n".join(p.read_text() for p in (tmp_path / "course_lib").rglob("*.py"))
    markers = [l for l in text.splitlines() if l.lstrip().startswith(("### BEGIN SOLUTION", "### END SOLUTION"))]
    assert markers == []
    assert "do not edit" in (tmp_path / "course_lib" / "nd.py").read_text().splitlines()[0]
    released = tasks.tasks_released_with(assignment)
    order = list(tasks.ASSIGNMENTS)
    for task, regions in library_regions().items():
        stub = f'NotImplementedError("{task}: not implemented yet'
        later = order.index(tasks.assignment_of(task)) > order.index(assignment)
        replaced_by_fallback = later and all(r.fallback for r in regions)
        assert (stub in text) == (task not in released and not replaced_by_fallback), task
        if replaced_by_fallback:
            assert all(r.fallback in text for r in regions), task
    # The release imports and runs what it keeps; the first stub it meets names its task.
    probe = (
        "import numpy as np, course_lib\n"
        "from course_lib import Tensor, ops\n"
        "assert course_lib.__file__.startswith(%r), course_lib.__file__\n"
        "try:\n"
        "    y = ops.conv(Tensor(np.ones((1, 4, 4, 2))), Tensor(np.ones((3, 3, 2, 1))), padding=1)\n"
        "    y.sum().backward()\n"
        "    print('conv works')\n"
        "except NotImplementedError as err:\n"
        "    print('stub', err)\n" % str(tmp_path))
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    order = list(tasks.ASSIGNMENTS)
    if order.index(assignment) > order.index("04_conv_backward"):
        assert result.stdout.strip() == "conv works"
    else:
        assert result.stdout.startswith("stub") and "not implemented yet" in result.stdout
