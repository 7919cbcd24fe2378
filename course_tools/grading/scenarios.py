"""Named scenarios the worker runs on the grader's behalf, against the student's code.

Each takes the student's namespace ``ns`` first, then plain values (arrays, numbers, strings,
lists, dicts) and returns plain values. They only *compute*: every comparison happens in the
grader, which holds the expected values.
"""
from __future__ import annotations

import importlib

import numpy as np

ALLOWED_MODULES = ("course_lib", "course_tools.grading.planted_bugs")


def _module(name: str):
    if not name.startswith(ALLOWED_MODULES):
        raise PermissionError(f"module {name!r} is not available to scenarios")
    return importlib.import_module(name)


def _resolve(ns: dict, target: str):
    """'course_lib.ops:conv' -> the function; 'student:name' -> a name the notebook defined."""
    module, _, name = target.partition(":")
    if module == "student":
        if name not in ns:
            raise NameError(f"the notebook does not define {name!r}")
        return ns[name]
    obj = _module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _to_numpy(value, what: str):
    from course_lib.autograd import Tensor
    from course_lib.nd import NDArray

    if isinstance(value, Tensor):
        value = value.realize_cached_data()
    if isinstance(value, NDArray):
        return np.asarray(value.numpy())
    if isinstance(value, np.ndarray) and type(value) is np.ndarray:
        return value
    raise TypeError(f"{what} returned a {type(value).__name__}, expected an NDArray or a Tensor")


def _tensor(array, requires_grad=True):
    from course_lib.autograd import Tensor

    return Tensor(array, dtype=str(array.dtype), requires_grad=requires_grad)


def forward(ns, op: str, attrs: dict, arrays: list):
    """``ops.<op>(**attrs).compute(*arrays)`` on NDArrays."""
    from course_lib import nd, ops

    instance = getattr(ops, op)(**attrs)
    return _to_numpy(instance.compute(*[nd.array(a, dtype=str(a.dtype)) for a in arrays]), f"{op}.compute")


def gradient(ns, op: str, attrs: dict, arrays: list, out_grad, graph: bool = False):
    """``op.gradient(out_grad, node)`` for node = op(*arrays): one array per input.

    With ``graph``, returns per input whether the adjoint was built from ``out_grad`` with ops
    (reachable through the graph) rather than computed outside it from raw arrays, which
    would make gradients of gradients impossible."""
    from course_lib import ops
    from course_lib.autograd import Tensor

    instance = getattr(ops, op)(**attrs)
    tensors = [_tensor(a) for a in arrays]
    node = instance(*tensors)
    upstream = _tensor(out_grad, requires_grad=graph)
    grads = instance.gradient_as_tuple(upstream, node)
    if not graph:
        return [_to_numpy(g, f"{op}.gradient") for g in grads]
    return [isinstance(g, Tensor) and _reaches(g, upstream) for g in grads]


def _reaches(start, target) -> bool:
    seen, stack = set(), [start]
    while stack:
        value = stack.pop()
        if value is target:
            return True
        if id(value) not in seen:
            seen.add(id(value))
            stack.extend(getattr(value, "inputs", []))
    return False


def call(ns, target: str, arrays: list, kwargs: dict, as_tensors: bool = False, out_grad=None):
    """Call a function on arrays (or on Tensors made from them). With ``out_grad``, also run
    backward and return {"out": ..., "grads": [...]}."""
    fn = _resolve(ns, target)
    args = [_tensor(a) for a in arrays] if as_tensors else list(arrays)
    out = fn(*args, **kwargs)
    if out_grad is None:
        return _plain(out, target)
    out.backward(_tensor(out_grad, requires_grad=False))
    return {"out": _to_numpy(out, target),
            "grads": [None if t.grad is None else _to_numpy(t.grad, f"{target} backward") for t in args]}


def ndarray_steps(ns, array, steps: list):
    """Apply NDArray methods in turn, e.g. [["permute", [1, 0]], ["getitem", [[0, 3, 2], [None, None, -1]]],
    ["flip", [0]]]; returns the values and the final view's shape, strides and offset."""
    from course_lib import nd

    a = nd.array(array, dtype=str(array.dtype))
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
    return {"values": np.asarray(a.numpy()), "shape": list(a.shape), "strides": list(a.strides),
            "offset": int(a.offset), "compact": bool(a.is_compact())}


def compact_strides(ns, shape: list):
    from course_lib import nd

    return [int(s) for s in nd.compact_strides(tuple(shape))]


def variable(ns, name: str):
    """A value the notebook computed (a worked answer, an experiment's results)."""
    if name not in ns:
        raise NameError(f"the notebook does not define {name!r}")
    return _plain(ns[name], name)


def _plain(value, where):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, np.ndarray) and type(value) is np.ndarray:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}[{k!r}]") for k, v in value.items()}
    try:
        return _to_numpy(value, where)
    except TypeError:
        raise TypeError(f"{where} is a {type(value).__name__}; expected numbers, arrays, lists or dicts") from None


def check_flags(ns, check: str, implementation: str, args: list | None = None):
    """Run the student's check function on an implementation; report whether it flagged it.

    Returns "passed" (no exception), "flagged: <message>" (AssertionError, ValueError) or
    "crashed: <type>: <message>" (anything else).
    """
    check_fn = _resolve(ns, check)
    impl = _resolve(ns, implementation)
    try:
        check_fn(impl, *(args or []))
    except (AssertionError, ValueError) as err:
        return f"flagged: {type(err).__name__}: {err}"[:500]
    except Exception as err:  # noqa: BLE001 - the student's check may fail in any way
        return f"crashed: {type(err).__name__}: {err}"[:500]
    return "passed"


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
# mode (accumulating several partial adjoints into one node).
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
    gradient of a gradient (backward with create_graph=True, then backward again)."""
    tensors = [_tensor(a) for a in arrays]
    out = EXPRESSIONS[name](*tensors)
    if not second_order:
        out.backward(_tensor(out_grad, requires_grad=False))
        return {"out": _to_numpy(out, name), "grads": [None if t.grad is None else _to_numpy(t.grad, name) for t in tensors]}
    out.backward(_tensor(out_grad, requires_grad=False), create_graph=True)
    first = [t.grad for t in tensors]
    total = first[0].sum()
    for g in first[1:]:
        total = total + g.sum()
    for t in tensors:
        t.grad = None
    total.backward()
    return [None if t.grad is None else _to_numpy(t.grad, f"{name} (second order)") for t in tensors]


def nn_conv(ns, in_channels: int, out_channels: int, kernel_size: int, stride: int, weight, bias, x, out_grad):
    """nn.Conv with the given weight (k, k, C_in, C_out) and bias on x (N, C_in, H, W): output and gradients."""
    from course_lib import nn

    layer = nn.Conv(in_channels, out_channels, kernel_size, stride=stride, dtype=str(x.dtype))
    layer.weight.data = _tensor(weight)
    layer.bias.data = _tensor(bias)
    xt = _tensor(x)
    out = layer(xt)
    if out_grad is None:  # forward only: a broken Conv.gradient must not cost nn.Conv's points
        return {"out": _to_numpy(out, "nn.Conv")}
    out.backward(_tensor(out_grad, requires_grad=False))
    return {"out": _to_numpy(out, "nn.Conv"), "x": _to_numpy(xt.grad, "nn.Conv input gradient"),
            "weight": _to_numpy(layer.weight.grad, "nn.Conv weight gradient"),
            "bias": _to_numpy(layer.bias.grad, "nn.Conv bias gradient")}


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
        record.append({"finite": bool(finite), "grads": [_to_numpy(u, "LossScaler.unscale") for u in unscaled],
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


SCENARIOS = {f.__name__: f for f in (forward, gradient, call, ndarray_steps, compact_strides, variable,
                                     check_flags, topo_order, expression, nn_conv, loss_scaler_run,
                                     central_difference_of)}
