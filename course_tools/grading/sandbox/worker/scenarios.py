"""Named scenarios the worker runs on the grader's behalf, against the student's code.

Each takes the student's namespace ``ns`` first, then plain values (arrays, numbers, strings,
lists, dicts) and returns plain values. They only *compute*: every comparison happens in the
grader, which holds the expected values. The grader trusts nothing they return beyond the
values themselves: a notebook can replace this module's functions, so no scenario reports a
flag or a verdict the grader would have to believe (compactness is decided by the grader from
a view's buffer, strides and offset; "built inside the graph" from re-evaluated values; which
implementation is a planted bug is never said).

Inputs may arrive as ``StridedView``s (protocol.py): the grader presents the same values as
non-compact views (transposed, strided with an offset, reversed), the way the library and the
later notebooks hand arrays to ops.

Any request may carry ``substitutes`` (substitutes.py, applied around the scenario by
main.serve): pieces of course_lib or of the notebook replaced, for this one call, by functions
that run in the grader. Values cross in and out through values.py.
"""
from __future__ import annotations

import importlib

import numpy as np

from . import timer
from .handed import hand, read_back
from .protocol import StridedView
from .values import host, nd_array, plain, tensor, to_numpy

ALLOWED_MODULES = ("course_lib",)


# ------------------------------------------------------------------------------- names
def allowed_module(name: str):
    if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_MODULES):
        raise PermissionError(f"module {name!r} is not available to scenarios")
    return importlib.import_module(name)


def resolve(ns: dict, target: str):
    """'course_lib.ops:conv' -> the function; 'student:name' -> a name the notebook defined."""
    module, _, name = target.partition(":")
    if module == "student":
        if name not in ns:
            raise NameError(f"the notebook does not define {name!r}")
        return ns[name]
    obj = allowed_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


# ------------------------------------------------------------------------------- scenarios
def forward(ns, op: str, attrs: dict, arrays: list):
    """``ops.<op>(**attrs).compute(*arrays)`` on NDArrays."""
    from course_lib import ops

    instance = getattr(ops, op)(**attrs)
    out = instance.compute(*[hand(nd_array(a)) for a in arrays])
    read_back()
    return to_numpy(out, f"{op}.compute")


def forward_view(ns, op: str, attrs: dict, arrays: list):
    """``ops.<op>(**attrs).compute(*arrays)`` as it is: its buffer, shape, strides and offset (the
    grader decides from them whether the result is compact, as for ndarray_steps)."""
    from course_lib import nd, ops

    out = getattr(ops, op)(**attrs).compute(*[hand(nd_array(a)) for a in arrays])
    read_back()
    if not isinstance(out, nd.NDArray):
        raise TypeError(f"{op}.compute returned a {type(out).__name__}, expected an NDArray")
    return _view_parts(out)


def _view_parts(a) -> dict:
    return {"buffer": np.array(a.handle), "shape": list(a.shape), "strides": list(a.strides), "offset": int(a.offset)}


def gradient(ns, op: str, attrs: dict, arrays: list, out_grad, output=None, reevaluate=None):
    """``op.gradient(out_grad, node)`` for node = op(*arrays): one array per input.

    output:     the forward's value, given by the grader: the node is built without running
                the student's compute (a backward task is graded on its own).
    reevaluate: a second out_grad. The adjoints' graph is evaluated again with out_grad's data
                replaced by this one; returns {"grads": [...], "reevaluated": [...]}. Adjoints
                built from out_grad with ops change accordingly; adjoints computed from raw
                arrays outside the graph keep their old values (seed 003's third mistake).
    """
    from course_lib import ops
    from course_lib.autograd import Tensor

    instance = getattr(ops, op)(**attrs)
    inputs = [hand(tensor(a)) for a in arrays]
    upstream = tensor(out_grad, requires_grad=reevaluate is not None)
    if output is None:
        node = instance(*inputs)
        hand(upstream)
    else:
        node = Tensor.__new__(Tensor)
        node._init(instance, inputs, cached_data=nd_array(output), requires_grad=True)
        hand(upstream), hand(node)
    grads = instance.gradient_as_tuple(upstream, node)
    first = [to_numpy(g, f"{op}.gradient") for g in grads]
    read_back()
    if reevaluate is None:
        return first
    upstream.cached_data = nd_array(reevaluate)
    for value in _graph_of(grads, stop=set(map(id, inputs)) | {id(upstream)}):
        value.cached_data = None
    again = [to_numpy(g, f"{op}.gradient (evaluated again)") for g in grads]
    return {"grads": first, "reevaluated": again}


def _graph_of(outputs, stop: set):
    """Every computed (non-leaf) Value the outputs depend on, not looking past ``stop``."""
    seen, order, stack = set(), [], [v for v in outputs if hasattr(v, "inputs")]
    while stack:
        value = stack.pop()
        if id(value) in seen or id(value) in stop:
            continue
        seen.add(id(value))
        if getattr(value, "op", None) is not None:
            order.append(value)
            stack.extend(value.inputs)
    return order


def call(ns, target: str, arrays: list, kwargs: dict, as_tensors: bool = False, out_grad=None, reevaluate=None):
    """Call a function on arrays (or on Tensors made from them). With ``out_grad``, also run
    backward and return {"out": ..., "grads": [...]}. With ``reevaluate`` (new values for the
    inputs, Tensors only): evaluate the result's graph again at those values, forward ops only,
    and return {"out": ..., "again": ...}: a result computed outside the graph does not change."""
    fn = resolve(ns, target)
    args = [tensor(a) for a in arrays] if as_tensors else [host(a) for a in arrays]
    for arg, value in zip(args, arrays):
        if isinstance(value, (np.ndarray, StridedView)):
            hand(arg)
    out = fn(*args, **kwargs)
    if reevaluate is not None:
        first = to_numpy(out, target)
        read_back()
        for t, value in zip(args, reevaluate):
            t.cached_data = nd_array(value)
        for value in _graph_of([out], stop=set(map(id, args))):
            value.cached_data = None
        return {"out": first, "again": to_numpy(out, f"{target} (evaluated again)")}
    if out_grad is None:
        read_back()
        return plain(out, target)
    upstream = hand(tensor(out_grad, requires_grad=False))
    out.backward(upstream)
    read_back()
    return {"out": to_numpy(out, target),
            "grads": [None if t.grad is None else to_numpy(t.grad, f"{target} backward") for t in args]}


def ndarray_steps(ns, array, steps: list):
    """Apply NDArray methods in turn, e.g. [["permute", [1, 0]], ["getitem", [[0, 3, 2], [None, None, -1]]],
    ["flip", [0]]]; returns the final view as it is: its buffer, shape, strides and offset (the
    grader reads the values and decides compactness from them)."""
    from course_lib import nd

    a = nd_array(array)
    for name, *args in steps:
        if name == "getitem":
            a = a[tuple(slice(*s) if isinstance(s, (list, tuple)) else s for s in args[0])]
        elif name == "setitem":
            index, value = args
            view_index = tuple(slice(*s) if isinstance(s, (list, tuple)) else s for s in index)
            a[view_index] = nd.array(value, dtype=a.dtype) if isinstance(value, np.ndarray) else value
        elif name in ("permute", "broadcast_to", "flip", "pad", "reshape", "compact", "as_strided"):
            a = getattr(a, name)(*args)
        else:
            raise ValueError(f"unknown NDArray step {name!r}")
    if not isinstance(a, nd.NDArray):
        raise TypeError(f"the steps gave a {type(a).__name__}, expected an NDArray")
    return _view_parts(a)


def compact_strides(ns, shape: list):
    from course_lib import nd

    return [int(s) for s in nd.compact_strides(tuple(shape))]


def variable(ns, name: str):
    """A value the notebook computed (a worked answer, an experiment's results)."""
    if name not in ns:
        raise NameError(f"the notebook does not define {name!r}")
    return plain(ns[name], name)


def check_flags(ns, check: str, implementations: list, args=None, seconds_each: int = 20):
    """Run the student's check function on each implementation in turn: ``check(impl, *args)``.

    The implementations come in an order the grader chose; planted bugs and correct versions
    alike are functions that run in the grader, indistinguishable here. One outcome per
    implementation: "passed" (no exception), "flagged: <message>" (AssertionError or
    ValueError) or "crashed: <type>: <message>" (anything else, or out of time).
    """
    check_fn = resolve(ns, check)
    outcomes = []
    request_left = timer._stop_timer()  # the request's own limit: paused, then resumed below
    try:
        for item in implementations:
            impl = resolve(ns, item) if isinstance(item, str) and ":" in item else item
            timer._start_timer(seconds_each)  # CPU time, with the wall-clock backstop (timer.py)
            try:
                check_fn(impl, *(args or []))
                outcomes.append("passed")
            except (AssertionError, ValueError) as err:
                outcomes.append(f"flagged: {type(err).__name__}: {err}"[:500])
            except timer.CellTimeout:
                outcomes.append(f"crashed: {timer.timeout_message(seconds_each)}")
            except Exception as err:  # noqa: BLE001 - the student's check may fail in any way
                outcomes.append(f"crashed: {type(err).__name__}: {err}"[:500])
            finally:
                timer._stop_timer()
    finally:
        timer._resume_timer(request_left)
    return outcomes


def topo_order(ns, edges: list, roots: list):
    """Build a graph of Values from edges [child, parent] over labels and return the labels in
    the order the student's find_topo_sort gives."""
    from course_lib import autograd

    nodes = {}

    def node(label):
        if label not in nodes:
            value = autograd.Value.__new__(autograd.Value)
            value._init(None, [], cached_data=None, requires_grad=True)
            value.label = label
            nodes[label] = value
        return nodes[label]

    for child, parent in edges:
        node(parent).inputs.append(node(child))
    order = autograd.find_topo_sort([node(r) for r in roots])
    return [getattr(v, "label", None) for v in order]


# Expressions that reuse a node or nest gradients: they exercise topological sort and reverse
# mode (accumulating several partial adjoints into one node). Only ops whose gradients are
# given in 02 (add, multiply, scalar add/multiply) appear, so reverse mode is graded on its own.
EXPRESSIONS = {
    "x*x+x": lambda x: x * x + x,
    "x*y+x": lambda x, y: x * y + x,
    "diamond": lambda x, y: (x * y + x) * (y + x),
    "chain_tanh": lambda x: _repeat(lambda t: (t * 0.5 + 0.1) * t, x, 4),
    "mlp": lambda x, w1, w2: __import__("course_lib").ops.relu(x @ w1) @ w2,
    "logsumexp_rows": lambda x: __import__("course_lib").ops.logsumexp(x, (1,)) * 2.0,
}


def _repeat(f, x, n):
    for _ in range(n):
        x = f(x)
    return x


def expression(ns, name: str, arrays: list, out_grad, second_order: bool = False):
    """Gradients of a catalogue expression through Tensor.backward (the student's reverse mode).

    With ``second_order``, returns the gradient of sum(grad) w.r.t. the inputs instead: a
    gradient of a gradient (backward with create_graph=True, then backward again, seeded with
    ones rather than through a summation, whose gradient is a task of its own)."""
    tensors = [tensor(a) for a in arrays]
    out = EXPRESSIONS[name](*tensors)
    if not second_order:
        out.backward(tensor(out_grad, requires_grad=False))
        return {"out": to_numpy(out, name),
                "grads": [None if t.grad is None else to_numpy(t.grad, name) for t in tensors]}
    out.backward(tensor(out_grad, requires_grad=False), create_graph=True)
    first = [t.grad for t in tensors]
    if any(g is None for g in first):
        return [None] * len(tensors)
    totals = [None] * len(tensors)
    for g in first:
        for t in tensors:
            t.grad = None
        g.backward(tensor(np.ones(g.shape, dtype=g.dtype), requires_grad=False))
        for j, t in enumerate(tensors):
            if t.grad is not None:
                part = to_numpy(t.grad, f"{name} (second order)")
                totals[j] = part if totals[j] is None else totals[j] + part
    return totals


def nn_conv(ns, in_channels: int, out_channels: int, kernel_size: int, stride: int, weight, bias, x, out_grad):
    """nn.Conv with the given weight (k, k, C_in, C_out) and bias on x (N, C_in, H, W): output and gradients."""
    from course_lib import nn

    layer = nn.Conv(in_channels, out_channels, kernel_size, stride=stride, dtype=str(x.dtype))
    layer.weight.data = tensor(weight)
    layer.bias.data = tensor(bias)
    xt = tensor(x)
    out = layer(xt)
    if out_grad is None:
        return {"out": to_numpy(out, "nn.Conv")}
    out.backward(tensor(out_grad, requires_grad=False))
    return {"out": to_numpy(out, "nn.Conv"), "x": to_numpy(xt.grad, "nn.Conv input gradient"),
            "weight": to_numpy(layer.weight.grad, "nn.Conv weight gradient"),
            "bias": to_numpy(layer.bias.grad, "nn.Conv bias gradient")}


def loss_scaler_run(ns, settings: dict, steps: list):
    """Drive the student's LossScaler: for each step, parameters get the given (float16) gradients;
    unscale, then update(finite). Returns per step: finite, the unscaled gradients, scale, counters."""
    from course_lib.autograd import Tensor
    from course_lib.nn import Parameter
    from course_lib.precision import LossScaler

    scaler = LossScaler(**settings)
    record = []
    for grads in steps:
        params = []
        for g in grads:
            p = Parameter(np.zeros_like(g), dtype=str(g.dtype))
            p.grad = Tensor(g, dtype=str(g.dtype), requires_grad=False)
            params.append(p)
        unscaled, finite = scaler.unscale(params)
        scaler.update(bool(finite))
        record.append({"finite": bool(finite), "grads": [to_numpy(u, "LossScaler.unscale") for u in unscaled],
                       "scale": float(scaler.scale_value), "skipped": int(scaler.skipped_steps),
                       "good": int(scaler.good_steps)})
    return record


FUNCTIONS = {
    "sum_of_cubes": lambda v: float(np.sum(v ** 3)),
    "sin_dot": lambda v: float(np.sum(np.sin(v) * np.arange(1, v.size + 1).reshape(v.shape))),
    "quadratic": lambda v: float(v.reshape(-1) @ np.diag(np.arange(1.0, v.size + 1)) @ v.reshape(-1)),
    # elements interact: an element not put back after its probe changes later probes
    "coupled": lambda v: float(np.exp(np.sum(np.sin(v)))),
}


def central_difference_of(ns, function: str, x, h: float):
    """course_lib.gradcheck.central_difference (the student's) on a catalogue function."""
    from course_lib import gradcheck

    probe = np.array(x, copy=True)  # in the caller's dtype: the function must not rely on float64 input
    out = gradcheck.central_difference(FUNCTIONS[function], probe, h)
    return {"grad": np.asarray(out), "x_after": probe}


def numerical_gradient(ns, target: str, arrays: list, projection, h: float):
    """The student's central_difference of x_i -> sum(target(..., x_i, ...) * projection), for each
    input i: the grader compares these with autograd's gradients, which it computes itself."""
    from course_lib import gradcheck
    from course_lib.autograd import Tensor

    fn = resolve(ns, target)
    values = [np.array(a, dtype=np.float64) for a in arrays]

    def scalar(i):
        def at(x):
            inputs = [Tensor(x if j == i else v, dtype="float64", requires_grad=False) for j, v in enumerate(values)]
            return float(np.sum(to_numpy(fn(*inputs), target) * projection))
        return at

    return [np.asarray(gradcheck.central_difference(scalar(i), v, h)) for i, v in enumerate(values)]


SCENARIOS = {f.__name__: f for f in (forward, forward_view, gradient, call, ndarray_steps, compact_strides, variable,
                                     check_flags, topo_order, expression, nn_conv, loss_scaler_run,
                                     central_difference_of, numerical_gradient)}
