"""`make gpu-check` (benchmarks/gpu_check.py): ready for a GPU, clean without one.

Its steps take the device as an argument, so their code runs here on the CuPy stand-in; only
the run against cuda() itself needs a GPU."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import course_lib
from conftest import CUDA_SIM, CUDA_UNDER_TEST

ROOT = Path(__file__).resolve().parents[1]
no_gpu = pytest.mark.skipif(CUDA_UNDER_TEST is not CUDA_SIM, reason="this machine has a GPU with CuPy")


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@no_gpu
def test_without_a_gpu_make_gpu_check_fails_cleanly_saying_why():
    result = subprocess.run(["make", "-s", "gpu-check"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "gpu-check: cannot run here:" in result.stderr and "Nothing was checked" in result.stderr
    direct = subprocess.run([sys.executable, "benchmarks/gpu_check.py"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert direct.returncode == 2 and direct.stdout == ""


@no_gpu
def test_the_cuda_tests_never_fall_back_to_the_stand_in_when_a_gpu_is_required():
    env = {**os.environ, "COURSE_REQUIRE_CUDA": "1"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda",
                             "tests/test_optim.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "COURSE_REQUIRE_CUDA=1 but cuda() is not available" in result.stdout
    assert " passed" not in result.stdout.splitlines()[-1]


def test_it_runs_the_device_tests_and_not_the_grading_ones(gpu_check):
    files = {Path(f).name for f in gpu_check.cuda_test_files()}
    assert {"test_conv.py", "test_nn.py", "test_precision.py", "test_profiler.py", "test_training.py"} <= files
    assert not files & {"test_notebooks.py", "test_autograder.py", "test_course_workflow.py"}


def test_the_training_step_on_the_stand_in(gpu_check):
    result = gpu_check.train_step(CUDA_SIM, epochs=2)
    assert set(result) == {"ok", "detail", "gpu", "cpu"}
    assert result["gpu"]["accuracy"] == pytest.approx(result["cpu"]["accuracy"], abs=0.01)
    assert "ms/step on cuda_sim" in result["detail"]


def test_the_benchmark_step_on_the_stand_in(gpu_check, monkeypatch):
    import bench_conv

    monkeypatch.setattr(bench_conv, "PHASE_PAUSE_S", 0.0)
    result = gpu_check.bench_step(CUDA_SIM, config=("tiny", 2, 8, 3, 4, 3, 1, 1), repeats=1, warmup=0)
    assert result["ok"], result["detail"]
    assert result["cuda_ms"] > 0 and result["cpu_ms"] > 0
    assert "torch not timed on the GPU" in result["detail"]  # this torch has no CUDA


def test_the_summary_fails_when_any_step_fails(gpu_check):
    text, ok = gpu_check.summary({"tests": {"ok": True, "detail": "3 passed"},
                                  "train": {"ok": False, "detail": "timed out after 90 s"}}, "a GPU", 12.0)
    assert not ok and "CUDA tests      PASS  3 passed" in text and "demo CNN        FAIL" in text
    assert text.splitlines()[-1].startswith("FAIL")
    assert gpu_check.summary({}, "a GPU", 1.0)[1] is False


def test_it_fits_the_budget_and_says_why_there_is_no_gpu(gpu_check):
    assert sum(gpu_check.TIME_LIMITS_S.values()) < gpu_check.BUDGET_S <= 8 * 60
    if not course_lib.cuda().enabled():
        assert "CuPy" in gpu_check.why_no_gpu() or "driver" in gpu_check.why_no_gpu()
