"""Misconceptions of 02_backward_ops, each a wrong gradient written here from its idea.

Wrong adjoints are computed in NumPy; where a misconception keeps the right values (a gradient
computed outside the graph), the right values come from the reference course_lib, whose
gradients the course's own tests check against PyTorch.
"""
from __future__ import annotations

import numpy as np

from course_lib import tasks

from course_tools.grading.api import (EXPRESSIONS, Call, Misconception, Probe, call_of, function_call, gradient_call,
                                      gradient_of, in_dtype, notebook_place, op_gradient,
                                      reevaluated_gradient_of, request_call, request_of)

NOTEBOOK = "02_backward_ops"
OP_OF_TASK = {"backward_power_scalar": "PowerScalar", "backward_divide": "EWiseDiv",
              "backward_divide_scalar": "DivScalar", "backward_matmul": "MatMul", "backward_summation": "Summation",
              "backward_broadcast_to": "BroadcastTo", "backward_reshape": "Reshape", "backward_negate": "Negate",
              "backward_transpose": "Transpose", "backward_log": "Log", "backward_exp": "Exp", "backward_relu": "ReLU",
              "backward_power": "EWisePow"}


def _where(part: str, title: str) -> str:
    return notebook_place(part, NOTEBOOK, title)


def wrong_gradient(op: str, adjoints):
    """A misconception of ``op.gradient`` from ``adjoints(attrs, arrays, out_grad) -> list`` (the wrong
    adjoints, float64): it answers plain gradient calls and re-evaluated ones (the same wrong
    formula applied to each out_grad)."""
    def compute(call: Call):
        found = gradient_of(call, op)
        if found is not None:
            attrs, arrays, g = found
            return [in_dtype(x, g) for x in adjoints(attrs, arrays, g)]
        found = reevaluated_gradient_of(call, op)
        if found is not None:
            attrs, arrays, g, g2 = found
            return {"grads": adjoints(attrs, arrays, g), "reevaluated": adjoints(attrs, arrays, g2)}
        return None
    return compute


# ------------------------------------------------------------------------------ elementwise
def _power_scalar_from_output(attrs, arrays, g):
    p, (a,) = attrs["scalar"], arrays
    with np.errstate(over="ignore", invalid="ignore"):  # a^p may overflow: the mistake's value is then inf
        y = a.astype(np.float64) ** p  # the output node a^p, used where the input a belongs
        return [g * p * y ** (p - 1)]


def _relu_passes_at_zero(attrs, arrays, g):
    (a,) = arrays
    return [g * (a >= 0)]  # -0.0 >= 0 too: the mask lets the gradient through at exactly zero


# ------------------------------------------------------------------------------ shaping
def _sum_size_one_axes(grad: np.ndarray, shape) -> np.ndarray:
    """The widely circulated reduce: sums the axes where ``shape`` has size 1, counting them from the
    left of ``grad`` as if no axis had been prepended; the prepended axes are never summed."""
    shape = tuple(shape)
    axes = tuple(i for i, n in enumerate(shape) if n == 1)
    if not axes:
        return grad
    return grad.sum(axis=axes).reshape(shape)  # raises where the count does not fit: no evidence


def _broadcast_gradient_ignoring_prepended(attrs, arrays, g):
    (a,) = arrays
    return [_sum_size_one_axes(g, a.shape)]


def reduce_ignores_prepended_axes(call: Call):
    found = call_of(call, "course_lib.ops.shaping:reduce_to_shape")
    if found is not None:
        (grad,), kwargs, _ = found
        return in_dtype(_sum_size_one_axes(grad, kwargs["shape"]), grad)
    return wrong_gradient("BroadcastTo", _broadcast_gradient_ignoring_prepended)(call)


def _transpose_back_last_two(attrs, arrays, g):
    # Right for the default axes (then the right answer is no evidence), wrong for any other pair.
    return [np.swapaxes(g, -1, -2)]


def _matmul_sums_leading_axes_only(attrs, arrays, g):
    a, b = arrays
    grad_a = np.matmul(g, np.swapaxes(b, -1, -2))
    grad_b = np.matmul(np.swapaxes(a, -1, -2), g)
    # Summing axis 0 until the number of axes matches: a broadcast size-1 batch axis stays unsummed.
    while grad_a.ndim > a.ndim:
        grad_a = grad_a.sum(axis=0)
    while grad_b.ndim > b.ndim:
        grad_b = grad_b.sum(axis=0)
    return [grad_a, grad_b]


# ------------------------------------------------------------------------------ outside the graph
def outside_the_graph(op: str):
    """The right adjoints, but computed from raw arrays: re-evaluated with a second out_grad, they
    keep the values of the first one."""
    def compute(call: Call):
        found = reevaluated_gradient_of(call, op)
        if found is None:
            return None
        attrs, arrays, g, _ = found
        first = list(op_gradient(op)(attrs, g, *arrays))
        return {"grads": first, "reevaluated": first}
    return compute


# ------------------------------------------------------------------------------ reverse mode
def adjoints_overwritten(call: Call):
    """Reverse mode where each partial adjoint replaces the previous one instead of adding to it,
    run on the reference ops in the order of the reference topological sort (the hidden checks
    lend the student the grader's sort, which gives the same order)."""
    args = request_of(call, "expression")
    if args is None or (len(args) > 3 and args[3]):
        return None  # second-order requests have another result structure
    from course_lib.autograd import Tensor, find_topo_sort, no_grad

    name, arrays, out_grad = args[:3]
    inputs = [Tensor(np.asarray(a), dtype=str(np.asarray(a).dtype)) for a in arrays]
    out = EXPRESSIONS[name](*inputs)
    received = {id(out): Tensor(np.asarray(out_grad), dtype=out.dtype, requires_grad=False)}
    adjoint = {}
    with no_grad():
        for node in reversed(find_topo_sort([out])):
            grad = received.pop(id(node), None)
            if grad is None:
                continue
            adjoint[id(node)] = grad
            if node.op is None:
                continue
            for child, part in zip(node.inputs, node.op.gradient_as_tuple(grad, node)):
                received[id(child)] = part  # the mistake: overwrite, not add
    return {"out": out.numpy(), "grads": [adjoint[id(t)].numpy() if id(t) in adjoint else None for t in inputs]}


# ------------------------------------------------------------------------------ softmax loss
def _cross_entropy_sum(z: np.ndarray, y: np.ndarray) -> float:
    z = z.astype(np.float64)
    peak = z.max(axis=1, keepdims=True)
    logsumexp = np.log(np.exp(z - peak).sum(axis=1)) + peak[:, 0]
    return float(np.sum(logsumexp - (z * y).sum(axis=1)))


def softmax_loss_sums_over_batch(call: Call):
    found = call_of(call, "course_lib.nn:softmax_loss")
    if found is None:
        return None
    (z, y), _, _ = found
    if "reevaluate" in call.options:
        z2, y2 = (np.asarray(v) for v in call.options["reevaluate"])
        return {"out": np.array(_cross_entropy_sum(z, y)), "again": np.array(_cross_entropy_sum(z2, y2))}
    return in_dtype(_cross_entropy_sum(z, y), z)


def softmax_loss_outside_the_graph(call: Call):
    found = call_of(call, "course_lib.nn:softmax_loss")
    if found is None or "reevaluate" not in call.options:
        return None
    (z, y), _, _ = found
    loss = np.array(_cross_entropy_sum(z, y) / z.shape[0])
    return {"out": loss, "again": loss}  # computed once, in NumPy: evaluating the graph again changes nothing


# ------------------------------------------------------------------------------ the catalogue
WHERE_RULE = _where("Part 1", "The rule: build gradient from ops on Tensors")
OUTSIDE_EXPLANATION = (
    "Your gradient has the right values, but it is computed from raw arrays (.numpy(), "
    ".realize_cached_data() or .cached_data) and wrapped in a new Tensor. Such a Tensor is a leaf: it does "
    "not remember out_grad or the inputs, so evaluating the gradient's graph again with another out_grad "
    "gives the old numbers, and a second derivative (backward with create_graph=True) silently comes out "
    "wrong. Build the gradient with ops on the Tensors out_grad, node and node.inputs (*, /, reshape, "
    "summation, ...).")

MISCONCEPTIONS = [
    Misconception(
        "backward_power_scalar", "power_scalar_uses_output", "the output a^p is used in place of the input a",
        "Your gradient uses node, the op's output y = a^p, where the derivative p a^(p-1) needs the input "
        "a = node.inputs[0]. So you compute p (a^p)^(p-1) = p a^(p(p-1)): right only for p = 0 and p = 1.",
        _where("Part 2", "power_scalar: y = a^p"), wrong_gradient("PowerScalar", _power_scalar_from_output)),
    Misconception(
        "backward_relu", "relu_gradient_passes_at_zero", "the relu mask lets the gradient through at a = 0",
        "Your mask is a >= 0 (or not a < 0), so at exactly a = 0 the gradient passes. relu has no derivative "
        "there; the course, like PyTorch, takes 0, so the mask is a > 0 and an input of exactly 0 (or -0.0) "
        "gets no gradient.",
        _where("Part 2", "relu: y = max(a, 0)"), wrong_gradient("ReLU", _relu_passes_at_zero)),
    Misconception(
        "backward_broadcast_to", "reduce_ignores_prepended_axes", "the axes broadcasting prepended are not summed",
        "Your reduce_to_shape sums only the axes where the input had size 1, and forgets the axes that "
        "broadcasting prepended on the left. A (4,) bias broadcast to (6, 4) must have its gradient summed over "
        "the 6 rows; yours comes back with shape (6, 4), or summed over the wrong axes. Sum over the first "
        "lead = len(grad.shape) - len(shape) axes as well as the stretched size-1 axes (counted after them).",
        _where("Part 3", "broadcast_to — and the helper reduce_to_shape"), reduce_ignores_prepended_axes),
    Misconception(
        "backward_transpose", "transpose_gradient_default_axes",
        "the gradient swaps the last two axes whatever the op's axes",
        "Your gradient transposes out_grad with the default axes, the last two, even when the op swapped two "
        "other axes. Swapping the same two axes again undoes a transpose: use the op's own self.axes.",
        _where("Part 3", "transpose"), wrong_gradient("Transpose", _transpose_back_last_two)),
    Misconception(
        "backward_matmul", "matmul_sums_leading_axes_only", "a broadcast size-1 batch axis is not summed",
        "Your gradient sums leading axes until the number of axes matches the input's, but a batch axis of size "
        "1 that broadcasting stretched (a (2, 1, 3, 4) input against a batch of 5) is never summed, so the "
        "adjoint keeps the stretched size. Reduce each adjoint to its input's shape with reduce_to_shape, which "
        "handles both kinds of broadcast axes.",
        _where("Part 3", "matmul"), wrong_gradient("MatMul", _matmul_sums_leading_axes_only)),
    Misconception(
        "reverse_mode", "adjoints_overwritten", "partial adjoints overwrite each other instead of adding up",
        "A node used several times receives one partial adjoint per use, and its adjoint is their sum. Your "
        "reverse mode keeps only the last partial that arrives (node_to_grads[child] = [grad], or "
        "grads[child] = grad), so for y = x*x + x it gives out_grad * x instead of out_grad * (2x + 1). Append "
        "each partial to the node's list and add them up with sum_node_list.",
        _where("Part 5", "Reverse-mode automatic differentiation"), adjoints_overwritten),
    Misconception(
        "softmax_loss", "softmax_loss_sums_over_batch", "the loss is summed over the batch, not averaged",
        "Your loss is the sum of the N per-example cross-entropies, N times the mean. The loss is their average "
        "(divide by N, the number of rows of the logits), so that its size and the step size of training do not "
        "depend on the batch size.",
        _where("Part 6", "The softmax loss"), softmax_loss_sums_over_batch),
    Misconception(
        "softmax_loss", "softmax_loss_outside_the_graph", "the loss is computed outside the graph",
        "Your loss has the right value, but it is computed with NumPy on .numpy() values and wrapped in a new "
        "Tensor, so it is a leaf with no connection to the logits: evaluated again at other logits it keeps its "
        "old value, and loss.backward() never reaches the model. Build it from ops (logsumexp, multiply, "
        "summation, divide_scalar) on the logits Tensor.",
        _where("Part 6", "The softmax loss"), softmax_loss_outside_the_graph),
] + [
    Misconception(task, "gradient_outside_the_graph", "the gradient is computed outside the graph",
                  OUTSIDE_EXPLANATION, WHERE_RULE, outside_the_graph(op))
    for task, op in OP_OF_TASK.items()
]

assert set(OP_OF_TASK) <= set(tasks.LIBRARY_TASKS[NOTEBOOK])


# ------------------------------------------------------------------------------ probes
# Inputs on which these mistakes show, for `course check` (probes.py).
def _probes() -> list[Probe]:
    r = np.random.default_rng(202)

    def signed(*shape):
        return r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape)

    def grad(task, op, attrs, arrays, out_grad, tol=0.0):
        return Probe(task, gradient_call(op, attrs, arrays, out_grad), tol, tol)

    n = r.standard_normal
    probes = [
        grad("backward_power_scalar", "PowerScalar", {"scalar": 2}, [signed(3, 4)], n((3, 4)), 1e-9),
        grad("backward_power_scalar", "PowerScalar", {"scalar": 3}, [signed(2, 3)], n((2, 3)), 1e-9),
        grad("backward_relu", "ReLU", {}, [np.array([[0.0, -0.0, 1.0], [-1.0, 0.0, 2.0]])],
             np.arange(1.0, 7.0).reshape(2, 3)),
        grad("backward_relu", "ReLU", {}, [np.array([0.0, 0.5, -0.0, -2.0, 0.0])], np.arange(2.0, 7.0)),
        grad("backward_broadcast_to", "BroadcastTo", {"shape": (3, 4)}, [n(4)], n((3, 4)), 1e-12),
        grad("backward_broadcast_to", "BroadcastTo", {"shape": (2, 3, 5)}, [n(5)], n((2, 3, 5)), 1e-12),
        Probe("backward_broadcast_to", function_call("course_lib.ops.shaping:reduce_to_shape", n((2, 3, 4)),
                                                     as_tensors=True, shape=[4]), 1e-12, 1e-12),
        grad("backward_transpose", "Transpose", {"axes": (0, 2)}, [n((2, 4, 3))], n((3, 4, 2))),
        grad("backward_transpose", "Transpose", {"axes": (1, 0)}, [n((2, 3, 4))], n((3, 2, 4))),
        grad("backward_matmul", "MatMul", {}, [n((2, 1, 3, 4)), n((5, 4, 2))], n((2, 5, 3, 2)), 1e-10),
        grad("backward_matmul", "MatMul", {}, [n((1, 3, 4)), n((2, 4, 2))], n((2, 3, 2)), 1e-10),
        Probe("reverse_mode", request_call("expression", "x*x+x", [n((2, 3))], n((2, 3))), 1e-10, 1e-12),
        Probe("reverse_mode", request_call("expression", "x*y+x", [n(5), n(5)], n(5)), 1e-10, 1e-12),
    ]
    for n, k in ((5, 3), (4, 6)):
        z, y = r.standard_normal((n, k)) * 2, np.eye(k)[r.integers(0, k, n)]
        probes.append(Probe("softmax_loss", function_call("course_lib.nn:softmax_loss", z, y, as_tensors=True),
                            1e-10, 1e-12))
        probes.append(Probe("softmax_loss", function_call("course_lib.nn:softmax_loss", z, y, as_tensors=True,
                                                 reevaluate=[r.standard_normal((n, k)) * 2, y]), 1e-10, 1e-12))
    # every op's gradient, evaluated again with a second out_grad (a gradient outside the graph)
    shapes = {"EWiseDiv": [(3, 4), (3, 4)], "EWisePow": [(3, 4), (3, 4)], "MatMul": [(2, 3, 4), (4, 5)],
              "BroadcastTo": [(3, 1)], "Transpose": [(2, 3, 4)]}
    attrs = {"PowerScalar": {"scalar": 3}, "DivScalar": {"scalar": 4.0}, "Reshape": {"shape": (4, 3)},
             "BroadcastTo": {"shape": (2, 3, 4)}, "Summation": {"axes": (1,)}, "Transpose": {"axes": None}}
    out_shapes = {"Reshape": (4, 3), "BroadcastTo": (2, 3, 4), "Summation": (3,), "Transpose": (2, 4, 3),
                  "MatMul": (2, 3, 5)}
    for task, op in OP_OF_TASK.items():
        for _ in range(2):
            arrays = [r.uniform(0.5, 2.0, s) for s in shapes.get(op, [(3, 4)])]
            out = out_shapes.get(op, (3, 4))
            probes.append(Probe(task, gradient_call(op, attrs.get(op, {}), arrays, r.standard_normal(out),
                                               reevaluate=r.standard_normal(out)), 1e-6, 1e-8))
    return probes


# The other tasks whose code a task's probes run (probes.py): reverse mode sorts with the
# student's topological sort, matmul's gradient reduces with the student's reduce_to_shape.
NEEDS = {"reverse_mode": ("topo_sort",), "backward_matmul": ("backward_broadcast_to",)}

PROBES = _probes()
