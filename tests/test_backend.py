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


def test_the_stand_in_device_goes_through_the_same_seam_as_cuda():
    from conftest import CUDA_SIM

    assert type(CUDA_SIM) is type(course_lib.cuda()) and CUDA_SIM.enabled()
    assert CUDA_SIM.xp.__name__ == "cupy_sim" and not CUDA_SIM.is_host
    data = course_lib.nd.array([1.0, 2.0], device=CUDA_SIM)
    assert type(data.handle).__module__.startswith("cupy_sim")
    host = CUDA_SIM.to_numpy(data.handle)
    assert type(host).__module__ == "numpy" and host.tolist() == [1.0, 2.0]
    CUDA_SIM.synchronize()


def test_a_module_without_a_device_is_not_enabled():
    from course_lib.backend import CUDADevice

    assert not CUDADevice("nowhere", "no_such_module_here", needs_driver=False).enabled()
    assert not CUDADevice("empty", "json", needs_driver=False).enabled()  # no .cuda.runtime: no device
