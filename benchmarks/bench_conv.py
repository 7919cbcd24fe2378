#!/usr/bin/env python
"""Benchmark course_lib's 2-D convolution (forward + backward) against PyTorch and SGEMM.

One run measures, for each configuration:

  course_lib  ``course_lib.ops.conv`` on NHWC float32 tensors, kernel (K, K, C_in, C_out),
              then ``out.backward(out_grad)`` (input and kernel gradients)
  torch       ``torch.nn.functional.conv2d`` forward + backward on the same data (NCHW)
  SGEMM       NumPy float32 matmuls of the three im2col shapes that a conv's forward,
              input-gradient and kernel-gradient need, and a square 2048 matmul: the ceiling
              that an im2col convolution on NumPy can at best reach

and prints time per forward+backward (median of --repeats after --warmup), the ratio
course_lib / torch, course_lib's time over the time of its own three GEMMs (the floor of an
im2col convolution on NumPy), GFLOP/s (forward+backward counted as
3 * 2*N*H_out*W_out*C_out*K*K*C_in), and the peak memory one forward+backward adds, each
library in a fresh process of its own, with PASS/MISS against the targets (TORCH_TARGETS,
FLOOR_TARGET, MEMORY_TARGET). Before timing, course_lib's output and gradients are checked
against torch, so a wrong conv cannot be timed silently.

``--device cuda`` runs course_lib on CuPy, torch on the same GPU (when torch has CUDA; else
torch is not timed), and the SGEMM ceiling with CuPy's matmul; every timed step ends with a
device synchronisation. Without torch, a GPU run is checked against course_lib on the CPU.

The script reads the BLAS environment (OPENBLAS_*, OMP_*, MKL_*...) and prints it; it never
sets it. For the single-threaded figures (the steadier ones on a shared machine) run
``OPENBLAS_NUM_THREADS=1 ... --threads 1`` (--threads sets torch's). Run from the repository root:

    .venv/bin/python benchmarks/bench_conv.py                 # N=32, 32x32, 32 -> 64, K=3
    .venv/bin/python benchmarks/bench_conv.py --stride 2
    .venv/bin/python benchmarks/bench_conv.py --all           # the preset list
    .venv/bin/python benchmarks/bench_conv.py --profile       # + cProfile of course_lib
    .venv/bin/python benchmarks/bench_conv.py --device cuda   # on the GPU (CuPy), vs torch on it
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import platform
import statistics
import sys
import time

import numpy as np


def _import_course_lib():
    """course_lib as a regular package: the one PYTHONPATH puts first, else this checkout's.

    A stale editable install can resolve ``course_lib`` to a namespace package (no __file__,
    its __init__ never run); then, as when it is not installed at all, fall back to the
    checkout this script lives in.
    """
    try:
        import course_lib
    except ImportError:
        course_lib = None
    if course_lib is None or getattr(course_lib, "__file__", None) is None:
        for name in [m for m in sys.modules if m == "course_lib" or m.startswith("course_lib.")]:
            del sys.modules[name]
        sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir)))
        import course_lib
    return course_lib


course_lib = _import_course_lib()

try:  # the oracle and the comparison; optional on a GPU machine (then only course_lib is timed)
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = F = None

from course_lib import nd  # noqa: E402
from course_lib.autograd import Tensor  # noqa: E402
from course_lib.ops import conv  # noqa: E402

# The targets: course_lib's time at most this many times torch's, per preset; at most
# FLOOR_TARGET times its own three GEMMs; peak memory at most MEMORY_TARGET times torch's.
TORCH_TARGETS = {"default": 2.0, "stride2": 3.0, "k5": 3.0}
FLOOR_TARGET = 1.25
MEMORY_TARGET = 2.0

# (name, N, H=W, C_in, C_out, K, stride, padding)
PRESETS = [
    ("default", 32, 32, 32, 64, 3, 1, 1),
    ("stride2", 32, 32, 32, 64, 3, 2, 1),
    ("k5", 32, 32, 32, 64, 5, 1, 2),
    ("wide", 8, 16, 128, 128, 3, 1, 1),
]

ENV_PREFIXES = ("OPENBLAS_", "GOTO", "OMP_", "MKL_", "KMP_", "BLIS_", "NVPL_", "VECLIB_")


# ---------------------------------------------------------------------- environment report
def _openblas_runtime():
    """(config, corename, threads) of the OpenBLAS that NumPy loaded, or None if not found."""
    libdir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libdir, "*openblas*.so*"))):
        try:
            lib = ctypes.CDLL(path)  # already loaded by numpy: this returns the same handle
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas_", "64_"), ("scipy_openblas_", ""), ("openblas_", "")):
            try:
                get_config = getattr(lib, f"{prefix}get_config{suffix}")
                get_corename = getattr(lib, f"{prefix}get_corename{suffix}")
                get_threads = getattr(lib, f"{prefix}get_num_threads{suffix}")
            except AttributeError:
                continue
            get_config.restype = ctypes.c_char_p
            get_corename.restype = ctypes.c_char_p
            get_threads.restype = ctypes.c_int
            return get_config().decode(), get_corename().decode(), get_threads()
    return None


def environment_report(device=None) -> list[str]:
    device = device or course_lib.cpu()
    lines = [
        f"python {platform.python_version()}  numpy {np.__version__}  "
        f"torch {torch.__version__ if torch else 'not installed'}",
        f"course_lib from {os.path.dirname(course_lib.__file__)}, device {device!r}",
        f"cpu: {platform.processor() or platform.machine()}, os.cpu_count()={os.cpu_count()}, "
        f"affinity={len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}",
    ]
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                "MKL_NUM_THREADS"):
        lines.append(f"env {var}={os.environ.get(var, '<unset>')}")
    others = sorted(k for k in os.environ if k.startswith(ENV_PREFIXES) and k not in (
        "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
        "MKL_NUM_THREADS"))
    for var in others:
        lines.append(f"env {var}={os.environ[var]}")

    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        lines.append(f"numpy BLAS (build): {blas.get('name')} {blas.get('version')}")
    except Exception as exc:  # show_config's layout is not a stable API
        lines.append(f"numpy BLAS (build): unknown ({exc!r})")
    try:
        from threadpoolctl import threadpool_info
        for pool in threadpool_info():
            lines.append(f"threadpoolctl: {pool.get('internal_api')} {pool.get('version')} "
                         f"arch={pool.get('architecture')} threads={pool.get('num_threads')} "
                         f"({os.path.basename(pool.get('filepath', ''))})")
    except ImportError:
        runtime = _openblas_runtime()
        if runtime:
            config, core, threads = runtime
            lines.append(f"numpy OpenBLAS (runtime): core={core} threads={threads} [{config.strip()}]")
        lines.append("threadpoolctl not installed: thread counts from OpenBLAS/torch directly")
    if torch:
        lines.append(f"torch: intra-op threads={torch.get_num_threads()}, "
                     f"inter-op={torch.get_num_interop_threads()}, mkldnn={torch.backends.mkldnn.is_available()}, "
                     f"mkl={torch.backends.mkl.is_available()}, cpu capability={torch.backends.cpu.get_cpu_capability()}, "
                     f"cuda={torch.cuda.is_available()}")
    if not device.is_host:
        xp = device.xp
        name = xp.cuda.runtime.getDeviceProperties(0)["name"]
        lines.append(f"gpu: {name.decode() if isinstance(name, bytes) else name}, "
                     f"{xp.__name__} {getattr(xp, '__version__', '?')}")
    return lines


# ---------------------------------------------------------------------- timing
# After a parallel region, torch's OpenMP workers and OpenBLAS's threads keep spinning for a
# while; on a machine with few cores that steals a core from whichever library runs next
# (measured here: a NumPy matmul right after a torch conv ran 2x slower). So each library is
# timed in its own phase, with a pause between phases, never interleaved.
PHASE_PAUSE_S = 0.5


def _cpu_sample():
    """(busy jiffies of the whole machine incl. steal, this process's jiffies, time) or None."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        own = int(fields[11]) + int(fields[12])  # utime + stime, all threads
    except (OSError, ValueError, IndexError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return user + nice + system + irq + softirq, steal, own, time.perf_counter()


CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class CpuMeter:
    """CPU time that *other* processes (and the hypervisor: steal) used during a phase, in % of
    one CPU, from /proc/stat; None where /proc is missing. A busy neighbour skews timings."""

    def __enter__(self):
        self.start = _cpu_sample()
        self.foreign = self.steal = None
        return self

    def __exit__(self, *exc):
        end = _cpu_sample()
        if self.start and end:
            wall = (end[3] - self.start[3]) * CLK_TCK
            if wall > 0:
                self.foreign = max(0.0, 100 * ((end[0] - self.start[0]) - (end[2] - self.start[2])) / wall)
                self.steal = 100 * (end[1] - self.start[1]) / wall
        return False


def _disturbed(before, after) -> bool:
    """True when other processes or steal took more than a quarter of one CPU (and more than
    one clock tick) while a sample ran: that sample is retaken."""
    if before is None or after is None:
        return False
    wall_ticks = (after[3] - before[3]) * CLK_TCK
    foreign = (after[0] - before[0]) - (after[2] - before[2]) + (after[1] - before[1])
    return foreign > max(1.0, 0.25 * wall_ticks)


def median_time(fn, repeats: int, warmup: int) -> tuple[float, float, int]:
    """(median, min, retaken) seconds of ``fn()`` over ``repeats`` runs after ``warmup`` untimed
    runs. A run during which another process used the CPU is thrown away and retaken, up to
    ``2 * repeats`` extra runs (then the disturbed runs are kept: see the phase report)."""
    for _ in range(warmup):
        fn()
    times, disturbed = [], []
    while len(times) < repeats:
        before = _cpu_sample()
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        if _disturbed(before, _cpu_sample()) and len(disturbed) < 2 * repeats:
            disturbed.append(elapsed)
            continue
        times.append(elapsed)
    return statistics.median(times), min(times), len(disturbed)


def conv_flops(n, h_out, w_out, c_in, c_out, k) -> int:
    """Forward + backward: three matmuls of the forward's size."""
    return 3 * 2 * n * h_out * w_out * c_out * k * k * c_in


def _matmul_timer(m, kk, nn, rng, device, repeats, warmup):
    """Median seconds of a float32 (m, kk) @ (kk, nn) matmul with the device's module."""
    xp = device.xp
    a = xp.asarray(rng.standard_normal((m, kk), dtype=np.float32))
    b = xp.asarray(rng.standard_normal((kk, nn), dtype=np.float32))
    out = xp.empty((m, nn), dtype=np.float32)

    def step():
        xp.matmul(a, b, out=out)
        device.synchronize()

    return median_time(step, repeats, warmup)[0]


def sgemm_ceiling(n, h_out, w_out, h_in, w_in, c_in, c_out, k, repeats, warmup, rng, device=None):
    """GFLOP/s of the device's float32 matmul (NumPy's, or CuPy's cuBLAS) on the im2col shapes
    of forward, input-gradient and kernel-gradient (equal FLOPs each; combined = total FLOPs /
    total time)."""
    device = device or course_lib.cpu()
    shapes = {
        # name: (M, K, N)
        "fwd   (N*Ho*Wo, K*K*Cin) @ (K*K*Cin, Cout)": (n * h_out * w_out, k * k * c_in, c_out),
        "dgrad (N*H*W, K*K*Cout) @ (K*K*Cout, Cin)": (n * h_in * w_in, k * k * c_out, c_in),
        "wgrad (K*K*Cin, N*Ho*Wo) @ (N*Ho*Wo, Cout)": (k * k * c_in, n * h_out * w_out, c_out),
    }
    results = {}
    total_flops = total_time = 0.0
    for name, (m, kk, nn) in shapes.items():
        t = _matmul_timer(m, kk, nn, rng, device, repeats, warmup)
        flops = 2 * m * kk * nn
        results[name] = flops / t / 1e9
        total_flops += flops
        total_time += t
    results["combined (the ceiling)"] = total_flops / total_time / 1e9
    return results, total_time


def square_sgemm(size, repeats, warmup, rng, device=None) -> float:
    t = _matmul_timer(size, size, size, rng, device or course_lib.cpu(), repeats, warmup)
    return 2 * size ** 3 / t / 1e9


# ---------------------------------------------------------------------- one configuration
def _course_lib_step(x_nhwc, w_kkio, g_nhwc, stride, padding, device):
    """course_lib's conv forward+backward on ``device``, ending with a synchronisation;
    NDArrays built once (a Tensor over an NDArray does not copy it)."""
    x_nd, w_nd, g_nd = (nd.array(a, device=device) for a in (x_nhwc, w_kkio, g_nhwc))

    def step():
        x = Tensor(x_nd, requires_grad=True)
        w = Tensor(w_nd, requires_grad=True)
        out = conv(x, w, stride=stride, padding=padding)
        out.backward(Tensor(g_nd, requires_grad=False))
        device.synchronize()
        return out, x.grad, w.grad

    return step


def _torch_step(x_nhwc, w_kkio, g_nhwc, stride, padding, where: str):
    """torch's conv2d forward+backward on the same numbers (NCHW, (C_out, C_in, K, K)) on
    ``where`` ("cpu" or "cuda"), ending with a synchronisation; outputs brought back NHWC."""
    def nchw(a, axes):
        return torch.from_numpy(np.ascontiguousarray(a.transpose(*axes))).to(where)

    x_t0, w_t0, g_t = nchw(x_nhwc, (0, 3, 1, 2)), nchw(w_kkio, (3, 2, 0, 1)), nchw(g_nhwc, (0, 3, 1, 2))

    def step():
        x = x_t0.detach().requires_grad_(True)
        w = w_t0.detach().requires_grad_(True)
        out = F.conv2d(x, w, stride=stride, padding=padding)
        out.backward(g_t)
        if where == "cuda":
            torch.cuda.synchronize()
        return out, x.grad, w.grad

    return step


def _reference(x_nhwc, w_kkio, g_nhwc, stride, padding, device):
    """(label, reference NHWC output, grad_x, grad_w): torch's on the CPU, or course_lib's on
    the CPU when torch is missing and course_lib runs on a GPU."""
    if torch is not None:
        out, gx, gw = _torch_step(x_nhwc, w_kkio, g_nhwc, stride, padding, "cpu")()
        return ("torch", out.detach().numpy().transpose(0, 2, 3, 1), gx.numpy().transpose(0, 2, 3, 1),
                gw.numpy().transpose(2, 3, 1, 0))
    if device.is_host:
        raise SystemExit("torch is not installed: nothing to check course_lib's CPU conv against")
    out, gx, gw = _course_lib_step(x_nhwc, w_kkio, g_nhwc, stride, padding, course_lib.cpu())()
    return "course_lib on the CPU", out.numpy(), gx.numpy(), gw.numpy()


def conv_inputs(rng, n, hw, c_in, c_out, k, stride, padding):
    """(H_out, x (N, H, W, C_in), kernel (K, K, C_in, C_out), out_grad (N, H_out, W_out, C_out)), float32."""
    h_out = (hw + 2 * padding - k) // stride + 1
    x_nhwc = rng.standard_normal((n, hw, hw, c_in), dtype=np.float32)
    w_kkio = (rng.standard_normal((k, k, c_in, c_out), dtype=np.float32) / np.sqrt(k * k * c_in)).astype(np.float32)
    g_nhwc = rng.standard_normal((n, h_out, h_out, c_out), dtype=np.float32)
    return h_out, x_nhwc, w_kkio, g_nhwc


def run_config(name, n, hw, c_in, c_out, k, stride, padding, repeats, warmup, rng, tol, device=None):
    device = device or course_lib.cpu()
    h_out, x_nhwc, w_kkio, g_nhwc = conv_inputs(rng, n, hw, c_in, c_out, k, stride, padding)

    course_lib_step = _course_lib_step(x_nhwc, w_kkio, g_nhwc, stride, padding, device)
    # torch is timed on the device course_lib runs on, or not at all (a CPU torch is no
    # yardstick for a GPU run).
    torch_where = "cpu" if device.is_host else "cuda"
    torch_step = None
    if torch is not None and (device.is_host or torch.cuda.is_available()):
        torch_step = _torch_step(x_nhwc, w_kkio, g_nhwc, stride, padding, torch_where)

    # ---- correctness, once
    out_c, gx_c, gw_c = course_lib_step()
    ref_name, *refs = _reference(x_nhwc, w_kkio, g_nhwc, stride, padding, device)
    checks = list(zip(("out", "grad_x", "grad_w"), (out_c.numpy(), gx_c.numpy(), gw_c.numpy()), refs))
    errors = []
    for label, mine, ref in checks:
        if mine.shape != ref.shape:
            raise SystemExit(f"[{name}] {label}: course_lib shape {mine.shape} != {ref_name} shape {ref.shape}")
        err = float(np.max(np.abs(mine.astype(np.float64) - ref.astype(np.float64))))
        scale = float(np.max(np.abs(ref))) or 1.0
        errors.append((label, err, err / scale))
        if not err <= tol * scale:
            raise SystemExit(f"[{name}] {label}: max abs error {err:.3g} exceeds {tol} x max|ref| "
                             f"({scale:.3g}); refusing to time a wrong conv")
    del out_c, gx_c, gw_c, refs, checks

    # NumPy phases first, torch last, a pause before each (see PHASE_PAUSE_S).
    noise = {}
    time.sleep(PHASE_PAUSE_S)
    with CpuMeter() as meter:
        ceiling, t_gemm = sgemm_ceiling(n, h_out, h_out, hw, hw, c_in, c_out, k, repeats, warmup, rng, device)
    noise["SGEMM"] = meter
    time.sleep(PHASE_PAUSE_S)
    with CpuMeter() as meter:
        t_cl, t_cl_min, retaken_cl = median_time(course_lib_step, repeats, warmup)
    noise["course_lib"] = meter
    t_th = t_th_min = None
    retaken_th = 0
    if torch_step is not None:
        time.sleep(PHASE_PAUSE_S)
        with CpuMeter() as meter:
            t_th, t_th_min, retaken_th = median_time(torch_step, repeats, warmup)
        noise["torch"] = meter
    time.sleep(PHASE_PAUSE_S)
    flops = conv_flops(n, h_out, h_out, c_in, c_out, k)
    return dict(name=name, shape=(n, hw, c_in, c_out, k, stride, padding), h_out=h_out, flops=flops,
                t_cl=t_cl, t_cl_min=t_cl_min, t_th=t_th, t_th_min=t_th_min, t_gemm=t_gemm, errors=errors,
                ceiling=ceiling, noise=noise, retaken=(retaken_cl, retaken_th), step=course_lib_step,
                device=device.name, reference=ref_name)


# ---------------------------------------------------------------------- peak memory
def peak_bytes(library: str, n, hw, c_in, c_out, k, stride, padding, threads=None, seed=0) -> int | None:
    """Peak memory one forward+backward of ``library`` ("course_lib" or "torch") adds to a fresh
    process that holds only the inputs: the resident set's high-water mark during two steps, reset
    just before them (Linux: /proc/self/clear_refs), minus the resident set before. Each library
    gets its own process, so neither sees the other's freed memory. None where not measurable."""
    import subprocess

    cmd = [sys.executable, os.path.abspath(__file__), "--_peak", library, "--n", str(n), "--hw", str(hw),
           "--cin", str(c_in), "--cout", str(c_out), "--k", str(k), "--stride", str(stride),
           "--padding", str(padding), "--seed", str(seed)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    try:
        return int(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"  peak memory of {library} not measured: {done.stderr.strip()[-300:]}")
        return None


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def _peak_child(library: str, args) -> None:
    _, x, w, g = conv_inputs(np.random.default_rng(args.seed), args.n, args.hw, args.cin, args.cout, args.k,
                             args.stride, args.padding)
    if library == "torch":
        step = _torch_step(x, w, g, args.stride, args.padding, "cpu")
    else:
        step = _course_lib_step(x, w, g, args.stride, args.padding, course_lib.cpu())
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # what imports and set-up freed leaves the resident set
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the high-water mark VmHWM to the current resident set
    for _ in range(2):
        result = step()
        del result
    print((_status_kib("VmHWM") - before) * 1024)


def print_results(results, square_gflops, repeats, warmup, target_ratio=None):
    print()
    print(f"conv2d forward+backward, float32, median of {repeats} after {warmup} warm-up "
          f"(min in brackets); GFLOP = 3 * 2*N*Ho*Wo*Cout*K*K*Cin")
    head = (f"{'config':<8} {'N':>3} {'HxW':>5} {'Cin':>4} {'Cout':>4} {'K':>2} {'s':>2} {'p':>2} "
            f"{'GFLOP':>6} | {'course_lib ms':>17} {'torch ms':>15} {'ratio':>6} | {'3 GEMMs ms':>10} "
            f"{'x GEMMs':>7} | {'cl GF/s':>7} {'torch GF/s':>10} {'cl % SGEMM':>10} | {'peak MiB cl/torch':>17}")
    print(head)
    print("-" * len(head))
    for r in results:
        n, hw, c_in, c_out, k, s, p = r["shape"]
        ceil = r["ceiling"]["combined (the ceiling)"]
        g_cl = r["flops"] / r["t_cl"] / 1e9
        if r["t_th"] is None:
            torch_cols = f"{'not timed':>15} {'-':>6}"
            g_th = f"{'-':>10}"
        else:
            torch_cols = (f"{r['t_th'] * 1e3:>6.2f} [{r['t_th_min'] * 1e3:>6.2f}] "
                          f"{r['t_cl'] / r['t_th']:>6.2f}")
            g_th = f"{r['flops'] / r['t_th'] / 1e9:>10.1f}"
        peak = r.get("peak") or {}
        memory = (f"{peak['course_lib'] / 2**20:>7.1f} / {peak['torch'] / 2**20:<7.1f}"
                  if peak.get("course_lib") and peak.get("torch") else f"{'-':>17}")
        print(f"{r['name']:<8} {n:>3} {f'{hw}x{hw}':>5} {c_in:>4} {c_out:>4} {k:>2} {s:>2} {p:>2} "
              f"{r['flops'] / 1e9:>6.2f} | {r['t_cl'] * 1e3:>8.2f} [{r['t_cl_min'] * 1e3:>6.2f}] "
              f"{torch_cols} | {r['t_gemm'] * 1e3:>10.2f} {r['t_cl'] / r['t_gemm']:>7.2f} | "
              f"{g_cl:>7.1f} {g_th} {100 * g_cl / ceil:>9.1f}% | {memory:>17}")
    print()
    print(f"targets: course_lib <= {FLOOR_TARGET:g} x the time of its own three GEMMs; <= "
          + ", ".join(f"{v:g} x torch's time ({k})" for k, v in TORCH_TARGETS.items())
          + f"; peak memory <= {MEMORY_TARGET:g} x torch's")
    for r in results:
        busy = any(m.foreign is not None and (m.foreign > 10 or m.steal > 10) for m in r["noise"].values())
        floor = r["t_cl"] / r["t_gemm"]
        parts = [f"{floor:.2f} x GEMMs: {'PASS' if floor <= FLOOR_TARGET else 'MISS'}"]
        goal = target_ratio if target_ratio is not None else TORCH_TARGETS.get(r["name"])
        if r["t_th"] is None:
            parts.append("torch ratio n/a (torch not timed on this device)")
        elif goal is not None:
            ratio = r["t_cl"] / r["t_th"]
            parts.append(f"{ratio:.2f} x torch: {'PASS' if ratio <= goal else 'MISS'}")
        peak = r.get("peak") or {}
        if peak.get("course_lib") and peak.get("torch"):
            mem = peak["course_lib"] / peak["torch"]
            parts.append(f"{mem:.2f} x torch's peak memory: {'PASS' if mem <= MEMORY_TARGET else 'MISS'}")
        print(f"  {r['name']:<8} " + "; ".join(parts)
              + ("   (UNRELIABLE: other processes were using the CPU, see below)" if busy else ""))
    print()
    print(f"SGEMM ceiling ({results[0]['device'] if results else '?'} float32 matmul, GFLOP/s) per configuration:")
    for r in results:
        parts = "; ".join(f"{k_}: {v:.1f}" for k_, v in r["ceiling"].items())
        print(f"  {r['name']:<8} {parts}")
    print(f"  square 2048 x 2048 @ 2048 x 2048: {square_gflops:.1f} GFLOP/s")
    print()
    print(f"correctness vs {results[0]['reference'] if results else 'torch'} "
          f"(max abs error, and relative to max|reference|):")
    for r in results:
        parts = "; ".join(f"{label} {err:.2e} ({rel:.1e})" for label, err, rel in r["errors"])
        print(f"  {r['name']:<8} {parts}")
    print()
    print("CPU used by other processes / stolen by the hypervisor during each phase (% of one CPU):")
    noisy = False
    for r in results:
        parts = []
        for phase, m in r["noise"].items():
            if m.foreign is None:
                parts.append(f"{phase} n/a")
                continue
            parts.append(f"{phase} {m.foreign:.0f}% / steal {m.steal:.0f}%")
            noisy |= m.foreign > 10 or m.steal > 10
        print(f"  {r['name']:<8} " + "; ".join(parts)
              + f"; disturbed samples retaken: course_lib {r['retaken'][0]}, torch {r['retaken'][1]}")
    if noisy:
        print("  WARNING: something else was using the CPU while timing; the numbers above are skewed. "
              "Rerun on an idle machine.")


def profile(step, top: int):
    import cProfile
    import pstats

    step()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5):
        step()
    prof.disable()
    print("\ncProfile of 5 course_lib forward+backward steps (sorted by tottime):")
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--hw", type=int, default=32, help="input height = width (default 32)")
    parser.add_argument("--cin", type=int, default=32, help="input channels (default 32)")
    parser.add_argument("--cout", type=int, default=64, help="output channels (default 64)")
    parser.add_argument("--k", type=int, default=3, help="kernel size K x K (default 3)")
    parser.add_argument("--stride", type=int, default=1, help="stride (default 1)")
    parser.add_argument("--padding", type=int, default=1, help="zero padding (default 1)")
    parser.add_argument("--repeats", type=int, default=15, help="timed runs; the median is reported (default 15)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    parser.add_argument("--all", action="store_true",
                        help="run the preset list: " + ", ".join(p[0] for p in PRESETS))
    parser.add_argument("--tol", type=float, default=1e-4,
                        help="max abs error allowed, relative to max|torch| (default 1e-4)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target-ratio", type=float, default=None,
                        help="goal: course_lib time / torch time at most this (default: per preset, "
                             + ", ".join(f"{k} {v:g}" for k, v in TORCH_TARGETS.items()) + ")")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch's threads (torch.set_num_threads); NumPy's come from OPENBLAS_NUM_THREADS, "
                             "so for single-threaded figures run OPENBLAS_NUM_THREADS=1 ... --threads 1")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory comparison")
    parser.add_argument("--_peak", choices=("course_lib", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true",
                        help="also cProfile course_lib's step for each configuration")
    parser.add_argument("--profile-top", type=int, default=25)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where course_lib (and torch, if it can) runs (default cpu)")
    args = parser.parse_args(argv)
    if args.threads is not None and torch is not None:
        torch.set_num_threads(args.threads)
    if args._peak:
        return _peak_child(args._peak, args)
    if args.threads is not None and os.environ.get("OPENBLAS_NUM_THREADS") != str(args.threads):
        print(f"WARNING: --threads {args.threads} sets torch's threads only; NumPy's OpenBLAS uses "
              f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}")

    device = course_lib.cpu() if args.device == "cpu" else course_lib.cuda()
    if not device.enabled():
        raise SystemExit("--device cuda: no GPU with CuPy on this machine (pip install -e '.[gpu]' on one)")
    print("\n".join(environment_report(device)))
    rng = np.random.default_rng(args.seed)
    configs = PRESETS if args.all else [
        ("custom" if (args.n, args.hw, args.cin, args.cout, args.k, args.stride, args.padding)
         != PRESETS[0][1:] else "default",
         args.n, args.hw, args.cin, args.cout, args.k, args.stride, args.padding)]
    results = []
    for name, n, hw, c_in, c_out, k, s, p in configs:
        print(f"running {name}: N={n} {hw}x{hw} Cin={c_in} Cout={c_out} K={k} stride={s} padding={p} ...",
              flush=True)
        results.append(run_config(name, n, hw, c_in, c_out, k, s, p, args.repeats, args.warmup, rng, args.tol,
                                  device))
        if device.is_host and torch is not None and not args.no_memory:
            results[-1]["peak"] = {lib: peak_bytes(lib, n, hw, c_in, c_out, k, s, p, args.threads, args.seed)
                                   for lib in ("course_lib", "torch")}
    time.sleep(PHASE_PAUSE_S)
    square = square_sgemm(2048, max(3, args.repeats // 3), 1, rng, device)
    print_results(results, square, args.repeats, args.warmup, args.target_ratio)
    if args.profile:
        for r in results:
            print(f"\n=== profile: {r['name']} ===")
            profile(r["step"], args.profile_top)


if __name__ == "__main__":
    main()
