"""The device seam: CuPy is never imported on a machine without a GPU."""
import os
import subprocess
import sys

import pytest

import course_lib


def _python(code, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_cpu_only_machine_never_imports_cupy():
    if course_lib.cuda().enabled():
        pytest.skip("this machine has a GPU with CuPy")
    result = _python("import sys, course_lib\n"
                     "from course_lib import ops, Tensor\n"
                     "ops.relu(Tensor([1.0, -1.0])).numpy()\n"
                     "assert course_lib.cuda().enabled() is False\n"
                     "print('cupy' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_default_device_follows_the_environment_variable():
    result = _python("import course_lib; print(course_lib.Tensor([1.0]).device)", COURSE_LIB_DEVICE="cpu")
    assert result.stdout.strip() == "cpu()"
    result = _python("import course_lib; course_lib.Tensor([1.0])", COURSE_LIB_DEVICE="tpu")
    assert result.returncode != 0 and "COURSE_LIB_DEVICE must be 'cpu' or 'cuda'" in result.stderr


def test_asking_for_cuda_without_one_is_a_clear_error():
    if course_lib.cuda().enabled():
        pytest.skip("this machine has a GPU with CuPy")
    result = _python("import course_lib; course_lib.Tensor([1.0])", COURSE_LIB_DEVICE="cuda")
    assert result.returncode != 0 and "no CUDA device" in result.stderr
    with pytest.raises(RuntimeError, match="not available"):
        course_lib.cuda().xp
