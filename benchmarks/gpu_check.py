#!/usr/bin/env python
"""`make gpu-check`: everything that needs a real GPU, in one run and one summary.

On a machine with an NVIDIA GPU and CuPy (``pip install -e '.[gpu]'``) it runs, within a
budget of 8 minutes:

  1. the CUDA tests: every test marked ``cuda`` (the cuda half of the device-parametrised
     tests and the cross-device ones) against ``cuda()``, with COURSE_REQUIRE_CUDA=1 so that
     nothing falls back to the CuPy stand-in of the ordinary test runs;
  2. the demo CNN trained on cuda, and on the CPU for comparison: test accuracy, time per step;
  3. the conv benchmark (benchmarks/bench_conv.py) on cuda, against torch on the same GPU when
     torch has CUDA, and course_lib on the CPU for the GPU/CPU ratio;

then prints one summary. It installs nothing. Each step runs in a subprocess with a time limit.

Exit status: 0 when every step passed; 1 when one failed or ran out of time; 2 when this
machine has no GPU with CuPy (nothing ran).

    make gpu-check                                  # = python benchmarks/gpu_check.py
    python benchmarks/gpu_check.py --step train     # one step, its result as JSON
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # this checkout's course_lib, installed or not
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_conv

BUDGET_S = 480
TIME_LIMITS_S = {"tests": 300, "train": 90, "bench": 75}  # within the budget, with room to spare
MIN_ACCURACY = 0.9


# ---------------------------------------------------------------------- is there a GPU?
def why_no_gpu() -> str | None:
    """None when course_lib.cuda() is usable, else the reason, for the user."""
    import course_lib
    from course_lib.backend import _nvidia_driver_present

    if course_lib.cuda().enabled():
        return None
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (pip install -e '.[gpu]' on a GPU machine; this script installs nothing)"
    if not _nvidia_driver_present():
        return "no NVIDIA driver (/proc/driver/nvidia/version and /dev/nvidia0 are missing)"
    return "CuPy is installed but finds no usable GPU (cupy.cuda.runtime.getDeviceCount() failed or is 0)"


def gpu_name(device) -> str:
    name = device.xp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    return f"{name}, {device.xp.__name__} {getattr(device.xp, '__version__', '?')}"


# ---------------------------------------------------------------------- step 1: the CUDA tests
def cuda_test_files() -> list[str]:
    """Test modules with device-parametrised or cuda-marked tests (not the grading ones, whose
    collection needs nbgrader and which have no GPU part)."""
    files = []
    for path in sorted((REPO / "tests").glob("test_*.py")):
        text = path.read_text()
        if "(device" in text or "mark.cuda" in text:
            files.append(str(path))
    return files


def run_tests(limit_s: float, junit: Path) -> dict:
    env = {**os.environ, "COURSE_REQUIRE_CUDA": "1",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", "-o", "timeout=120",
           f"--junitxml={junit}", *cuda_test_files()]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "detail": f"timed out after {limit_s:.0f} s"}
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if junit.exists():
        suite = ET.parse(junit).getroot()
        suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
        counts = {key: int(suite.get(key, 0)) for key in counts}
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    ok = proc.returncode == 0 and passed > 0
    detail = (f"{passed} passed, {counts['failures']} failed, {counts['errors']} errors, "
              f"{counts['skipped']} skipped in {time.perf_counter() - start:.0f} s")
    if not ok:
        detail += "\n" + "\n".join("      " + line for line in (proc.stdout + proc.stderr).splitlines()[-25:])
    return {"ok": ok, "detail": detail, **counts, "passed": passed}


# ---------------------------------------------------------------------- step 2: the demo CNN
def train_demo(device, epochs: int = 8, batch_size: int = 64, seed: int = 0) -> dict:
    """The demo's training (small CNN, Adam, 8x8 digits) on ``device``: test accuracy, seconds
    of the first epoch (it includes CuPy compiling its kernels) and ms per step after it."""
    from course_lib import optim
    from course_lib.data import DataLoader, load_digits
    from course_lib.seeding import seed_everything
    from course_lib.train import accuracy, small_cnn, train_epoch

    seed_everything(seed)
    x_train, y_train = load_digits("train")
    x_test, y_test = load_digits("test")
    model = small_cnn(device=device)
    opt = optim.Adam(model.parameters(), lr=0.01)
    loader = DataLoader(x_train, y_train, batch_size=batch_size, shuffle=True, seed=seed, device=device)
    epoch_s = []
    for _ in range(epochs):
        start = time.perf_counter()
        train_epoch(model, loader, opt)
        device.synchronize()
        epoch_s.append(time.perf_counter() - start)
    steady = epoch_s[1:] or epoch_s
    return {"accuracy": accuracy(model, x_test, y_test, device=device), "first_epoch_s": epoch_s[0],
            "ms_per_step": 1e3 * sum(steady) / (len(steady) * len(loader))}


def train_step(device, epochs: int = 8) -> dict:
    import course_lib

    gpu, cpu = train_demo(device, epochs), train_demo(course_lib.cpu(), epochs)
    ok = gpu["accuracy"] > MIN_ACCURACY and abs(gpu["accuracy"] - cpu["accuracy"]) <= 0.03
    detail = (f"accuracy {gpu['accuracy']:.1%} on {device.name} ({cpu['accuracy']:.1%} on cpu); "
              f"{gpu['ms_per_step']:.1f} ms/step on {device.name} vs {cpu['ms_per_step']:.1f} on cpu "
              f"(GPU/CPU time {gpu['ms_per_step'] / cpu['ms_per_step']:.2f}x); "
              f"first epoch {gpu['first_epoch_s']:.1f} s (kernel compilation)")
    return {"ok": ok, "detail": detail, "gpu": gpu, "cpu": cpu}


# ---------------------------------------------------------------------- step 3: the conv benchmark
def bench_step(device, config=("default", 32, 32, 32, 64, 3, 1, 1), repeats: int = 10, warmup: int = 3) -> dict:
    """bench_conv's configuration on ``device`` (checked against a reference first) and on the CPU."""
    import numpy as np

    import bench_conv
    import course_lib

    name, n, hw, c_in, c_out, k, s, p = config
    runs = {}
    for dev, reps in ((device, repeats), (course_lib.cpu(), max(3, repeats // 2))):
        try:
            runs[dev.name] = bench_conv.run_config(name, n, hw, c_in, c_out, k, s, p, reps, warmup,
                                                   np.random.default_rng(0), 1e-4, dev)
        except SystemExit as stop:  # bench_conv refuses to time a wrong conv
            return {"ok": False, "detail": f"on {dev.name}: {stop}"}
    gpu, cpu = runs[device.name], runs["cpu"]
    torch_part = ("torch not timed on the GPU (no torch with CUDA here)" if gpu["t_th"] is None
                  else f"torch on the same GPU {gpu['t_th'] * 1e3:.2f} ms ({gpu['t_cl'] / gpu['t_th']:.2f}x torch's time)")
    detail = (f"N={n} {hw}x{hw} {c_in}->{c_out} K={k}: fwd+bwd {gpu['t_cl'] * 1e3:.2f} ms on {device.name}, "
              f"{cpu['t_cl'] * 1e3:.1f} ms on cpu (GPU {cpu['t_cl'] / gpu['t_cl']:.1f}x faster); {torch_part}; "
              f"max rel. error vs {gpu['reference']} {max(e[2] for e in gpu['errors']):.1e}")
    return {"ok": True, "detail": detail, "cuda_ms": gpu["t_cl"] * 1e3, "cpu_ms": cpu["t_cl"] * 1e3,
            "torch_cuda_ms": None if gpu["t_th"] is None else gpu["t_th"] * 1e3}


# ---------------------------------------------------------------------- driver
def run_step_subprocess(step: str, limit_s: float) -> dict:
    """One step in a fresh interpreter (a hung GPU or a crash cannot take the others down)."""
    try:
        proc = subprocess.run([sys.executable, __file__, "--step", step], cwd=REPO, capture_output=True,
                              text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return {"ok": False, "detail": f"timed out after {limit_s:.0f} s"}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = "\n".join("      " + line for line in (proc.stdout + proc.stderr).splitlines()[-20:])
    return {"ok": False, "detail": f"exit status {proc.returncode}, no result\n{tail}"}


def summary(results: dict, header: str, seconds: float) -> tuple[str, bool]:
    ok = bool(results) and all(r["ok"] for r in results.values())
    labels = {"tests": "CUDA tests", "train": "demo CNN", "bench": "conv benchmark"}
    lines = [f"GPU check on {header}"]
    lines += [f"  {labels[step]:<15} {'PASS' if r['ok'] else 'FAIL'}  {r['detail']}" for step, r in results.items()]
    lines.append(f"{'PASS' if ok else 'FAIL'} in {seconds:.0f} s (budget {BUDGET_S} s)")
    return "\n".join(lines), ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", choices=("tests", "train", "bench"),
                        help="run one step in this process and print its result as JSON")
    args = parser.parse_args(argv)

    reason = why_no_gpu()
    if reason is not None:
        print(f"gpu-check: cannot run here: {reason}. Nothing was checked.", file=sys.stderr)
        return 2
    import course_lib

    device = course_lib.cuda()
    if args.step:
        with tempfile.TemporaryDirectory() as tmp:
            result = {"tests": lambda: run_tests(TIME_LIMITS_S["tests"], Path(tmp) / "junit.xml"),
                      "train": lambda: train_step(device), "bench": lambda: bench_step(device)}[args.step]()
        print(json.dumps(result))
        return 0 if result["ok"] else 1

    start = time.perf_counter()
    header = gpu_name(device)
    print(f"gpu-check: {header}; steps: CUDA tests, demo CNN, conv benchmark (up to {BUDGET_S} s)", flush=True)
    results = {}
    for step in ("tests", "train", "bench"):
        left = BUDGET_S - (time.perf_counter() - start)
        if left < 20:
            results[step] = {"ok": False, "detail": "not run: the time budget is spent"}
            continue
        print(f"gpu-check: {step} ...", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            limit = min(TIME_LIMITS_S[step], left - 5)
            results[step] = (run_tests(limit, Path(tmp) / "junit.xml") if step == "tests"
                             else run_step_subprocess(step, limit))
    text, ok = summary(results, header, time.perf_counter() - start)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
