"""Releases before assignment 03 run NDArray views through NumPy fallbacks (course_tools.regions).
They must behave exactly like the reference: the library's own tests run against them."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from course_lib import tasks
from course_tools.regions import library_regions, strip_regions

ROOT = Path(__file__).resolve().parents[1]
SUITES = ["test_ndarray.py", "test_ndarray_arithmetic.py", "test_ops_elementwise.py", "test_ops_shaping.py",
          "test_ops_flip_dilate.py", "test_conv.py", "test_pooling.py", "test_autograd.py", "test_nn.py"]


def test_every_fallback_passes_the_reference_tests(tmp_path):
    with_fallback = {task for task, regions in library_regions().items() if any(r.fallback for r in regions)}
    assert with_fallback >= {"ndarray_compact_strides", "ndarray_permute", "ndarray_broadcast_to", "ndarray_getitem"}
    lib = tmp_path / "course_lib"
    shutil.copytree(ROOT / "course_lib", lib, ignore=shutil.ignore_patterns("__pycache__"))
    for path in lib.rglob("*.py"):
        path.write_text(strip_regions(path.read_text(), with_fallback, tasks.assignment_of,
                                      use_fallback=with_fallback))
    assert "nd_fallbacks.adopt_view(self, self._view().transpose" in (lib / "nd.py").read_text()
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             *[str(ROOT / "tests" / s) for s in SUITES]],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
    assert " passed" in result.stdout.splitlines()[-1]
