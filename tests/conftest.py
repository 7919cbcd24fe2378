"""Shared fixtures and helpers of the course_lib test suite.

Oracles: PyTorch on the CPU (float64 and float32) and central finite differences in float64.
Expected values never come from course_lib itself.

Test files import the helpers below with ``from conftest import ...`` (pytest puts this
folder on sys.path, and the module is the one pytest already loaded).
"""
from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pytest
import torch

import course_lib
from course_lib import ops
from course_lib.autograd import Tensor, no_grad
from course_lib.backend import CUDADevice
from course_lib.host import to_numpy

# ---------------------------------------------------------------------------------- devices
# The CUDA code path runs in every test run. With a GPU and CuPy the "cuda" parameter is
# cuda(); without, it is cuda_sim: the same CUDADevice class over the strict CuPy stand-in
# tests/cupy_sim, so course_lib takes exactly its CUDA path and every rule the stand-in
# enforces (no implicit conversion to NumPy, ...) applies. COURSE_REQUIRE_CUDA=1 (set by
# `make gpu-check`) turns a missing GPU into a failure instead of a run on the stand-in.
CUDA_SIM = CUDADevice("cuda_sim", "cupy_sim", needs_driver=False)
REQUIRE_CUDA = os.environ.get("COURSE_REQUIRE_CUDA") == "1"
CUDA_UNDER_TEST = course_lib.cuda() if course_lib.cuda().enabled() else CUDA_SIM

DEVICE_PARAMS = [
    pytest.param(course_lib.cpu(), id="cpu"),
    pytest.param(CUDA_UNDER_TEST, id=CUDA_UNDER_TEST.name, marks=pytest.mark.cuda),
]


def cuda_device():
    """The CUDA device of this run: cuda() on a GPU machine, else the stand-in cuda_sim."""
    if REQUIRE_CUDA and CUDA_UNDER_TEST is CUDA_SIM:
        pytest.fail("COURSE_REQUIRE_CUDA=1 but cuda() is not available (no GPU with CuPy)", pytrace=False)
    return CUDA_UNDER_TEST


@pytest.fixture(params=DEVICE_PARAMS)
def device(request):
    """Every course_lib device: cpu(), and cuda() or its stand-in cuda_sim (see above)."""
    return cuda_device() if request.param is CUDA_UNDER_TEST else request.param


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's id: reproducible, different per test."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


# ---------------------------------------------------------------------------------- tolerances
FLOAT_DTYPES = ["float16", "float32", "float64"]
ORACLE_DTYPES = ["float64", "float32"]  # dtypes compared with PyTorch

TOLERANCES = {
    "float64": dict(rtol=1e-9, atol=1e-11),
    "float32": dict(rtol=1e-4, atol=1e-5),
    "float16": dict(rtol=1e-2, atol=1e-2),
}


# ---------------------------------------------------------------------------------- conversions
# Every conversion to NumPy goes through course_lib.host.to_numpy (Tensors, NDArrays on any
# device, CuPy and stand-in arrays, torch tensors).
def to_torch(array, dtype: str | None = None, requires_grad: bool = False) -> torch.Tensor:
    """A leaf torch tensor (CPU) holding a copy of ``array`` in ``dtype``."""
    t = torch.tensor(to_numpy(array), dtype=getattr(torch, dtype) if dtype else None)
    return t.requires_grad_(requires_grad)


def tensor(array, device, dtype: str | None = "float64", requires_grad: bool = True) -> Tensor:
    """A course_lib leaf Tensor on ``device`` holding a copy of ``array`` in ``dtype``."""
    return Tensor(np.asarray(array), device=device, dtype=dtype, requires_grad=requires_grad)


def to_torch_nchw(x_nhwc, dtype: str | None = None, requires_grad: bool = False) -> torch.Tensor:
    """An NHWC array as a contiguous NCHW leaf torch tensor."""
    t = torch.tensor(to_numpy(x_nhwc), dtype=getattr(torch, dtype) if dtype else None)
    return t.permute(0, 3, 1, 2).contiguous().requires_grad_(requires_grad)


def from_torch_nchw(t: torch.Tensor) -> np.ndarray:
    """A torch NCHW tensor as an NHWC NumPy array."""
    return t.detach().permute(0, 2, 3, 1).cpu().numpy()


def kernel_to_torch(w_hwio, dtype: str | None = None, requires_grad: bool = False) -> torch.Tensor:
    """A (KH, KW, C_in, C_out) kernel as torch's (C_out, C_in, KH, KW), contiguous leaf."""
    t = torch.tensor(to_numpy(w_hwio), dtype=getattr(torch, dtype) if dtype else None)
    return t.permute(3, 2, 0, 1).contiguous().requires_grad_(requires_grad)


def kernel_from_torch(t: torch.Tensor) -> np.ndarray:
    """torch's (C_out, C_in, KH, KW) as a (KH, KW, C_in, C_out) NumPy array."""
    return t.detach().permute(2, 3, 1, 0).cpu().numpy()


# ---------------------------------------------------------------------------------- comparisons
def assert_close(actual, expected, dtype: str = "float64", what: str = "", **tolerance):
    """``actual`` (ours) equals ``expected`` (an oracle) within the tolerance of ``dtype``."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape}, expected {e.shape}"
    np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), err_msg=what,
                               **(tolerance or TOLERANCES[dtype]))


def assert_torch_grads(ours: Sequence[Tensor], theirs: Sequence[torch.Tensor], dtype: str):
    """Each course_lib leaf's .grad matches the torch leaf's .grad (shape, dtype, values)."""
    for i, (x, t) in enumerate(zip(ours, theirs)):
        if t.grad is None:  # the output does not depend on this input
            assert x.grad is None or not to_numpy(x.grad).any(), f"input {i} is unused but got a gradient"
            continue
        assert x.grad is not None, f"input {i} received no gradient"
        assert x.grad.dtype == dtype, f"input {i}: gradient dtype {x.grad.dtype}, expected {dtype}"
        assert_close(x.grad, t.grad, dtype, what=f"gradient of input {i}")


# ---------------------------------------------------------------------------------- inputs
def normal(rng, shape):
    return rng.standard_normal(shape)


def positive(rng, shape):
    """Values in [0.5, 2): safe for log, fractional powers and division."""
    return rng.uniform(0.5, 2.0, shape)


def away_from_zero(rng, shape):
    """|values| in [0.2, 1.5) with random signs: no kink of relu within a finite-difference step."""
    return rng.uniform(0.2, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def large(rng, shape):
    """Values around 1000, where a naive exp overflows (logsumexp)."""
    return 1000.0 + 3.0 * rng.standard_normal(shape)


@dataclass
class OpCase:
    """One op on one set of input shapes: ``ours`` on course_lib Tensors, ``theirs`` on torch.

    make: one generator (rng, shape) -> float64 array for all inputs, or one per input.
    fd_h: the finite-difference step.
    """
    name: str
    ours: Callable
    theirs: Callable
    shapes: tuple
    make: Callable | tuple = normal
    fd_h: float = 1e-5

    def __str__(self) -> str:
        return f"{self.name}-" + "-".join("x".join(map(str, s)) or "scalar" for s in self.shapes)

    def arrays(self, rng) -> list[np.ndarray]:
        makers = self.make if isinstance(self.make, tuple) else (self.make,) * len(self.shapes)
        return [np.asarray(make(rng, shape), dtype=np.float64) for make, shape in zip(makers, self.shapes)]


def case_params(cases: Sequence[OpCase]):
    return [pytest.param(case, id=str(case)) for case in cases]


def check_against_torch(ours: Callable, theirs: Callable, arrays, dtype: str, device, rng,
                        check_dtype: bool = True):
    """Forward and backward of ``ours`` vs ``theirs`` on the same inputs cast to ``dtype``.

    The backward pass uses a random out_grad (the same for both), not just ones.
    """
    xs = [tensor(a, device, dtype) for a in arrays]
    ts = [to_torch(a, dtype, requires_grad=True) for a in arrays]
    out, expected = ours(*xs), theirs(*ts)
    if check_dtype:
        assert out.dtype == dtype, f"output dtype {out.dtype}, expected {dtype}"
    assert_close(out, expected, dtype, what="forward")
    v = rng.standard_normal(tuple(expected.shape))
    out.backward(tensor(v, device, dtype, requires_grad=False))
    expected.backward(to_torch(v, dtype))
    assert_torch_grads(xs, ts, dtype)


def check_case_against_torch(case: OpCase, dtype: str, device, rng):
    check_against_torch(case.ours, case.theirs, case.arrays(rng), dtype, device, rng)


# ---------------------------------------------------------------------------------- finite differences
FD_MAX_ELEMENTS = 48  # per-element differences up to this size, random directions above it
FD_DIRECTIONS = 3


def assert_matches_finite_differences(f: Callable[[np.ndarray], float], x: np.ndarray,
                                      analytic: np.ndarray, rng, h: float = 1e-5,
                                      rtol: float = 1e-5, atol: float = 1e-6, what: str = ""):
    """``analytic`` is the gradient of the scalar function ``f`` at ``x`` (float64).

    Central differences (f(x + h e) - f(x - h e)) / 2h: per element for small ``x``,
    otherwise along random directions u, checking <analytic, u>.
    """
    assert analytic.shape == x.shape, f"{what}: gradient shape {analytic.shape}, input shape {x.shape}"
    if x.size <= FD_MAX_ELEMENTS:
        numeric = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            step = np.zeros_like(x)
            step[idx] = h
            numeric[idx] = (f(x + step) - f(x - step)) / (2 * h)
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol, err_msg=what)
    else:
        for _ in range(FD_DIRECTIONS):
            u = rng.standard_normal(x.shape)
            numeric = (f(x + h * u) - f(x - h * u)) / (2 * h)
            np.testing.assert_allclose(np.sum(analytic * u), numeric, rtol=rtol, atol=atol * np.sqrt(x.size),
                                       err_msg=f"{what}: directional derivative")


def check_finite_differences(fn: Callable, arrays, device, rng, h: float = 1e-5):
    """The float64 gradient of every input of ``fn`` (Tensors -> Tensor) against central
    differences of the scalar <fn(inputs), v> for a random v."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    xs = [tensor(a, device, "float64") for a in arrays]
    out = fn(*xs)
    v = rng.standard_normal(out.shape)
    out.backward(tensor(v, device, "float64", requires_grad=False))

    def projected(values) -> float:
        with no_grad():
            y = fn(*[tensor(a, device, "float64", requires_grad=False) for a in values])
        return float(np.sum(y.numpy() * v))

    for i, x in enumerate(xs):
        assert x.grad is not None, f"input {i} received no gradient"

        def f(xi, i=i):
            return projected(arrays[:i] + [xi] + arrays[i + 1:])

        assert_matches_finite_differences(f, arrays[i], x.grad.numpy(), rng, h=h, what=f"input {i}")


def check_case_finite_differences(case: OpCase, device, rng):
    check_finite_differences(case.ours, case.arrays(rng), device, rng, h=case.fd_h)


# ---------------------------------------------------------------------------------- second order
def check_second_order_against_torch(ours: Callable, theirs: Callable, arrays, dtype: str, device, rng):
    """Gradient of a gradient: with a random out_grad ``v`` that is itself a variable,
    g = d<f(x), v>/dx (kept as a graph), then d<g, u>/d(x, v) against torch.autograd.grad."""
    xs = [tensor(a, device, dtype) for a in arrays]
    ts = [to_torch(a, dtype, requires_grad=True) for a in arrays]
    out, expected = ours(*xs), theirs(*ts)
    v_np = rng.standard_normal(tuple(expected.shape))
    v, v_t = tensor(v_np, device, dtype), to_torch(v_np, dtype, requires_grad=True)

    out.backward(v, create_graph=True)
    grads = [x.grad for x in xs]
    grads_t = torch.autograd.grad(expected, ts, v_t, create_graph=True)
    us = [rng.standard_normal(g.shape) for g in grads_t]
    for g, g_t in zip(grads, grads_t):
        assert_close(g, g_t, dtype, what="first-order gradient")
        assert g.requires_grad, "create_graph=True must leave gradients that require grad"

    z = None
    for g, u in zip(grads, us):
        term = ops.summation(g * tensor(u, device, dtype, requires_grad=False))
        z = term if z is None else z + term
    z_t = sum((g_t * to_torch(u, dtype)).sum() for g_t, u in zip(grads_t, us))
    for x in xs + [v]:
        x.grad = None
    z.backward()
    second_t = torch.autograd.grad(z_t, ts + [v_t], allow_unused=True)
    for i, (x, s_t) in enumerate(zip(xs + [v], second_t)):
        expected_grad = s_t if s_t is not None else torch.zeros(x.shape, dtype=getattr(torch, dtype))
        actual = x.grad if x.grad is not None else np.zeros(x.shape)
        assert_close(actual, expected_grad, dtype, what=f"second-order gradient of input {i}")


# ---------------------------------------------------------------------------------- PostgreSQL
# A real PostgreSQL server for the gradebook tests: one per session, a fresh database per test.
# Skipped where the server binaries (or psycopg2) are missing, unless COURSE_REQUIRE_POSTGRES=1
# (set by .ci/run once it has installed them): then a missing server is a failure, not a skip.
import itertools  # noqa: E402

from postgres_server import PostgresServer, find_postgres_bin  # noqa: E402

_postgres_databases = itertools.count()


def _postgres_unavailable(reason: str):
    if os.environ.get("COURSE_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{reason} (COURSE_REQUIRE_POSTGRES=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A running PostgresServer, shared by the session (stopped at its end)."""
    if find_postgres_bin() is None:
        _postgres_unavailable("PostgreSQL server binaries not found; apt-get install postgresql")
    try:
        import psycopg2  # noqa: F401  (the driver of the URLs below)
    except ImportError:
        _postgres_unavailable("psycopg2 is not installed; pip install psycopg2-binary")
    with PostgresServer(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The SQLAlchemy URL (postgresql+psycopg2://...) of a new, empty database."""
    return postgres_server.create_database(f"test_{next(_postgres_databases)}")


# ---------------------------------------------------------------------------------- grading
# An assignment's misconceptions (and 06's planted bugs) are not tests: they are wrong versions of
# its solutions, written in the grader, whose explanations the feedback shows on purpose, and whose
# lines a student's own right code can share. They are secret like the solutions (test_notebooks).
ASSIGNMENT_DATA = {"misconceptions.py", "planted_bugs.py"}


def hidden_code_lines() -> list[str]:
    """Lines of the hidden suites long enough to be recognisable if they leaked into feedback."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return [line.strip() for path in (root / "autograder").rglob("*.py") if path.name not in ASSIGNMENT_DATA
            for line in path.read_text().splitlines()
            if len(line.strip()) > 30 and not line.strip().startswith(("#", '"""'))]


# ---------------------------------------------------------------------------------- leaks
def significant_lines(text):
    """Lines worth searching for: long enough not to occur by chance, not comments or markers."""
    out = set()
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 16 and not line.startswith(("#", '"""', "raise NotImplementedError")):
            out.add(line)
    return out


def code_units(text, given=frozenset()):
    """The significant lines of each top-level statement of a Python file (a function, a class, a
    table), less ``given``, for the units with two or more: the secrets of a hidden file. A leak
    is two lines of one unit; two lines of a long file that sit in different functions are a
    coincidence (``from course_lib import tasks`` and ``if found is None:``), not a leak. Imports
    are not secrets."""
    import ast

    units = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            continue
        unit = significant_lines(ast.get_source_segment(text, node, padded=True) or "") - given
        if len(unit) >= 2:
            units.append(unit)
    return units


def lines_outside_regions(text):
    """The stripped lines of ``text`` outside its solution regions (course_lib's or nbgrader's markers)."""
    lines, inside = set(), False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("### BEGIN SOLUTION"):
            inside = True
        elif stripped.startswith("### END SOLUTION"):
            inside = False
        elif not inside:
            lines.add(stripped)
    return lines


def given_lines():
    """Lines outside every solution region of course_lib and of the source notebooks: students
    see them anyway, so they may appear anywhere."""
    import nbformat

    from course_lib import tasks

    root = Path(__file__).resolve().parents[1]
    lines = set()
    for path in (root / "course_lib").rglob("*.py"):
        lines |= lines_outside_regions(path.read_text())
    for assignment in tasks.ASSIGNMENTS:
        notebook = root / "source" / assignment / f"{assignment}.ipynb"
        if notebook.exists():
            for cell in nbformat.read(str(notebook), as_version=4).cells:
                lines |= lines_outside_regions(cell.source)
    return lines


def leaks(secrets, text):
    """The secrets (each a set of lines of one region or hidden file) found in ``text``: a secret
    counts as leaked when two of its lines appear there as whole lines (or its only line does).
    One shared line alone (``x = np.array(x, dtype=np.float64)``) is a coincidence, not a leak."""
    lines = {line.strip() for line in text.splitlines()}
    return [sorted(secret & lines) for secret in secrets if secret and len(secret & lines) >= min(2, len(secret))]


def gradebook_task_scores(gradebook, assignment: str, tasks) -> dict[str, dict[str, float]]:
    """{student: {task: score}} of ``assignment`` in an open nbgrader Gradebook, for ``tasks``."""
    return {s.student_id: {g.name: g.score for nb in s.notebooks for g in nb.grades if g.name in tasks}
            for s in gradebook.assignment_submissions(assignment)}


# ---------------------------------------------------------------------------------- order
# `make test` runs on two pytest-xdist workers, each taking whole files in the collection's order
# (--dist loadfile --no-loadscope-reorder): the files go longest first, by the seconds each took in
# the last measured run (tests/file_seconds.json, generated by tests/file_seconds.py from the junit
# XML `make test` writes); files it does not name go last, in pytest's order. Only the order changes.
from file_seconds import load as load_file_seconds, longest_first  # noqa: E402


def pytest_collection_modifyitems(items):
    longest_first(items, load_file_seconds())
