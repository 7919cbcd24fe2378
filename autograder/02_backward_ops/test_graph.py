"""Hidden checks of 02_backward_ops, part 2: topological sort (properties of the order on graphs the
notebook never built), reverse mode (accumulation of partial adjoints, PyTorch as the oracle) and
the softmax loss (PyTorch's cross_entropy)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from course_tools.grading.api import (StudentError, as_array, as_float, as_list, as_mapping, describe, expect_close,
                                      notebook_value, task, topo_sort_substitutes)


# ---------------------------------------------------------------------------------------------
# Topological sort: student.request("topo_order", edges, roots), edges [child, parent]

def check_order(order, edges, roots, what):
    """Each node reachable from the roots appears exactly once, after all of its inputs."""
    inputs = {}
    for child, parent in edges:
        inputs.setdefault(parent, []).append(child)
    reachable, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n not in reachable:
            reachable.add(n)
            stack.extend(inputs.get(n, []))
    if order is None:
        raise AssertionError(f"{what}: find_topo_sort returned None. Did it forget to `return` the list?")
    if len(order) != len(set(order)):
        raise AssertionError(f"{what}: a node appears more than once ({len(order)} entries for {len(set(order))} "
                             f"distinct nodes): keep a set of visited nodes")
    if set(order) != reachable:
        missing, extra = len(reachable - set(order)), len(set(order) - reachable)
        raise AssertionError(f"{what}: the order has {len(set(order))} nodes, but the roots depend on "
                             f"{len(reachable)} ({missing} missing, {extra} not reachable)")
    position = {n: i for i, n in enumerate(order)}
    for parent in order:
        for child in inputs.get(parent, []):
            if position[child] > position[parent]:
                raise AssertionError(f"{what}: a node comes before one of its inputs (at positions "
                                     f"{position[parent]} and {position[child]} of {len(order)})")


def topo(student, edges, roots):
    """The labels (the edges' strings or ints) of the nodes in find_topo_sort's order; None for a
    node that is not one of the graph's."""
    order = as_list(student.request("topo_order", edges, roots), "find_topo_sort's order")
    for i, label in enumerate(order):
        if not (label is None or isinstance(label, (str, int))):
            raise StudentError(f"find_topo_sort's order[{i}]: expected a node's label, got {describe(label)}")
    return order


DIAMOND = [["x", "u"], ["w", "u"], ["u", "v"], ["x", "v"], ["v", "out"], ["u", "out"]]


@task("topo_sort", weight=2)
def test_topo_sort_diamond(student):
    """a graph where two nodes are used twice (u = x*w, v = u + x, out = v*u)"""
    order = topo(student, DIAMOND, ["out"])
    check_order(order, DIAMOND, ["out"], "diamond graph")
    assert order[-1] == "out", "diamond graph: the root must come last (it depends on every other node)"


@task("topo_sort")
def test_topo_sort_single_leaf(student):
    """a graph of one leaf"""
    check_order(topo(student, [], ["leaf"]), [], ["leaf"], "a single leaf")


@task("topo_sort", weight=2)
def test_topo_sort_deep_chain(student):
    """a chain of 5000 nodes (deeper than Python's recursion limit)"""
    edges = [[i, i + 1] for i in range(5000)]
    order = topo(student, edges, [5000])
    check_order(order, edges, [5000], "a chain of 5000 nodes")


@task("topo_sort", weight=2)
def test_topo_sort_repeated_squaring(student):
    """16 repeated squarings y = y * y: 17 nodes but 2^16 paths to the leaf"""
    edges = []
    for i in range(16):
        edges += [[i, i + 1], [i, i + 1]]
    check_order(topo(student, edges, [16]), edges, [16], "16 repeated squarings (each node uses its input twice)")


@task("topo_sort")
def test_topo_sort_ladder(student):
    """a ladder n_k = f(n_(k-1), n_(k-2)) of 20 nodes: many shared paths"""
    edges = [["n0", "n1"]] + [[f"n{k - 1}", f"n{k}"] for k in range(2, 20)] + [[f"n{k - 2}", f"n{k}"] for k in range(2, 20)]
    check_order(topo(student, edges, ["n19"]), edges, ["n19"], "a ladder of 20 nodes")


@task("topo_sort")
def test_topo_sort_paths_of_unequal_length(student):
    """a leaf that reaches the root directly and through a long path (breadth-first orders fail here)"""
    edges = [["x", "out"], ["x", "a"], ["a", "b"], ["b", "c"], ["c", "d"], ["d", "out"], ["y", "c"]]
    check_order(topo(student, edges, ["out"]), edges, ["out"], "paths of length 1 and 5 from x to the root")


@task("topo_sort")
def test_topo_sort_several_roots(student):
    """several roots that share nodes, one root an input of another: each node once"""
    roots = ["out", "v", "u", "x"]
    check_order(topo(student, DIAMOND, roots), DIAMOND, roots, "roots [out, v, u, x] of the diamond graph")
    roots = ["u", "out"]
    check_order(topo(student, DIAMOND, roots), DIAMOND, roots, "roots [u, out] (u is an input of out)")
    forest = [["a", "b"], ["c", "d"], ["a", "d"]]
    check_order(topo(student, forest, ["b", "d"]), forest, ["b", "d"], "two roots sharing a leaf")


@task("topo_sort")
def test_topo_sort_wide_fan_in(student):
    """a root with 3000 inputs, each computed from one shared leaf"""
    edges = [[f"m{i}", "root"] for i in range(3000)] + [["leaf", f"m{i}"] for i in range(3000)]
    check_order(topo(student, edges, ["root"]), edges, ["root"], "a root with 3000 inputs sharing one leaf")


# ---------------------------------------------------------------------------------------------
# Reverse mode: student.request("expression", name, arrays, out_grad) runs out.backward(out_grad).
# The topological sort is the grader's (a task of its own); the expressions use only ops whose
# gradients the notebook gives (add, multiply, their scalar forms, logsumexp).

EXPRESSIONS = {
    "x*x+x": lambda x: x * x + x,
    "x*y+x": lambda x, y: x * y + x,
    "diamond": lambda x, y: (x * y + x) * (y + x),
    "chain_tanh": lambda x: _repeat(lambda t: (t * 0.5 + 0.1) * t, x, 4),
    "logsumexp_rows": lambda x: torch.logsumexp(x, dim=1) * 2.0,
}


def _repeat(f, x, n):
    for _ in range(n):
        x = f(x)
    return x


def torch_backward(fn, arrays, out_grad):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(torch.tensor(out_grad, dtype=torch.float64))
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


def check_expression(student, name, arrays, out_grad, what):
    got = as_mapping(student.request("expression", name, arrays, out_grad,
                                     options={"substitutes": topo_sort_substitutes(student)}), what, ("grads",))
    grads = as_list(got["grads"], f"{what}: the inputs' gradients", len(arrays))
    _, expected = torch_backward(EXPRESSIONS[name], arrays, out_grad)
    # Every input's gradient is compared before the first failure is raised: a right one is
    # evidence too (a mistake that would spoil it is not named, diagnosis.py).
    failures = []
    for i, (g, e) in enumerate(zip(grads, expected)):
        if g is None:
            failures.append(AssertionError(f"{what}: input {i} has no .grad after backward()"))
            continue
        try:
            expect_close(g, e, f"{what}: .grad of input {i}", rtol=1e-10, atol=1e-12)
        except AssertionError as err:
            failures.append(err)
    if failures:
        raise failures[0]


@task("reverse_mode", weight=3)
def test_reverse_mode_accumulates_x_times_x_plus_x(student, rng):
    """y = x*x + x: x receives three partial adjoints that must be ADDED, for a random out_grad"""
    x = rng.standard_normal((2, 3))
    check_expression(student, "x*x+x", [x], rng.standard_normal((2, 3)), "y = x*x + x on (2, 3)")


@task("reverse_mode")
def test_reverse_mode_two_inputs(student, rng):
    """f = x*y + x: adjoints of two inputs, one of them used twice"""
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    check_expression(student, "x*y+x", [x, y], rng.standard_normal(5), "f = x*y + x on (5,)")


@task("reverse_mode", weight=2)
def test_reverse_mode_diamond(student, rng):
    """f = (x*y + x) * (y + x): both inputs reach the output along several paths"""
    x, y = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    check_expression(student, "diamond", [x, y], rng.standard_normal((3, 2)), "f = (x*y + x) * (y + x) on (3, 2)")


@task("reverse_mode")
def test_reverse_mode_repeated_reuse(student, rng):
    """t -> (t*0.5 + 0.1) * t applied 4 times: each intermediate node used twice"""
    x = rng.uniform(-1.0, 1.0, 6)
    check_expression(student, "chain_tanh", [x], rng.standard_normal(6), "four steps of t -> (t*0.5 + 0.1)*t on (6,)")


@task("reverse_mode")
def test_reverse_mode_through_logsumexp(student, rng):
    """2 * logsumexp over the rows of a (4, 5) input (a provided op with its gradient)"""
    x = rng.standard_normal((4, 5))
    check_expression(student, "logsumexp_rows", [x], rng.standard_normal(4), "2 * logsumexp(x, axes=(1,)) on (4, 5)")


@task("reverse_mode")
def test_reverse_mode_single_op_two_inputs(student, rng):
    """backward through one multiply: each input gets out_grad times the other"""
    a, b, g = rng.standard_normal((2, 4)), rng.standard_normal((2, 4)), rng.standard_normal((2, 4))
    got = student.call("course_lib.ops:multiply", a, b, as_tensors=True, out_grad=g,
                       substitutes=topo_sort_substitutes(student))
    for i, expected in enumerate([g * b, g * a]):
        if got["grads"][i] is None:
            raise AssertionError(f"multiply(a, b).backward(out_grad): input {i} has no .grad")
        expect_close(got["grads"][i], expected, f"multiply(a, b).backward(out_grad): .grad of input {i}",
                     rtol=1e-12, atol=1e-12)


@task("reverse_mode")
def test_reverse_mode_logsumexp_over_two_axes(student, rng):
    """backward through logsumexp over axes (0, 2) of a 3-D tensor"""
    x, g = rng.standard_normal((2, 3, 4)), rng.standard_normal(3)
    got = student.call("course_lib.ops:logsumexp", x, as_tensors=True, out_grad=g, axes=(0, 2),
                       substitutes=topo_sort_substitutes(student))
    _, (expected,) = torch_backward(lambda t: torch.logsumexp(t, dim=(0, 2)), [x], g)
    if got["grads"][0] is None:
        raise AssertionError("logsumexp(x, axes=(0, 2)).backward(out_grad): x has no .grad")
    expect_close(got["grads"][0], expected, "logsumexp(x, axes=(0, 2)).backward(out_grad) on (2, 3, 4): x.grad",
                 rtol=1e-10, atol=1e-12)


@task("reverse_mode")
def test_reverse_mode_second_derivative(student, rng):
    """backward(create_graph=True) gives a graph: the derivative of sum(d/dx (x*x + x)) is 2 * out_grad"""
    x, g = rng.standard_normal(4), rng.standard_normal(4)
    got = as_list(student.request("expression", "x*x+x", [x], g, True,
                                  options={"substitutes": topo_sort_substitutes(student)}),
                  "second derivative of x*x + x", 1)
    if got[0] is None:
        raise AssertionError("second derivative of x*x + x: x has no .grad after differentiating x.grad; with "
                             "create_graph=True the adjoints must be built with ops (a graph), not raw arrays")
    expect_close(got[0], 2 * g, "gradient of sum(x.grad) for y = x*x + x (second order)", rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# softmax_loss

def one_hot(labels, k):
    return np.eye(k)[labels]


def torch_loss(z, labels):
    return F.cross_entropy(torch.tensor(z, dtype=torch.float64), torch.tensor(labels)).item()


LOSS_CASES = [(6, 3, 1.0), (1, 4, 1.0), (9, 7, 4.0), (3, 2, 0.1)]


@task("softmax_loss", weight=2)
@pytest.mark.parametrize("n,k,scale", LOSS_CASES, ids=[f"N{n}-K{k}" for n, k, _ in LOSS_CASES])
def test_softmax_loss_value(student, rng, n, k, scale):
    """the mean cross-entropy of softmax(logits) against one-hot targets, as PyTorch's cross_entropy"""
    z, labels = rng.standard_normal((n, k)) * scale, rng.integers(0, k, n)
    got = as_array(student.call("course_lib.nn:softmax_loss", z, one_hot(labels, k), as_tensors=True),
                   f"softmax_loss of ({n}, {k}) logits")
    assert np.shape(got) == (), f"softmax_loss of ({n}, {k}) logits: the loss has shape {np.shape(got)}, expected ()"
    expect_close(got, torch_loss(z, labels), f"softmax_loss, N={n}, K={k}", rtol=1e-10, atol=1e-12)


@task("softmax_loss")
def test_softmax_loss_is_stable_for_large_logits(student, rng):
    """softmax_loss with logits of size ~1000 (no overflow: finite and exact)"""
    z, labels = rng.standard_normal((5, 4)) * 1000.0, rng.integers(0, 4, 5)
    got = student.call("course_lib.nn:softmax_loss", z, one_hot(labels, 4), as_tensors=True)
    expect_close(got, torch_loss(z, labels), "softmax_loss with logits ~1000", rtol=1e-10, atol=1e-10)


@task("softmax_loss")
def test_softmax_loss_float32(student, rng):
    """softmax_loss of float32 logits of size ~30"""
    z, labels = (rng.standard_normal((8, 10)) * 30).astype(np.float32), rng.integers(0, 10, 8)
    got = student.call("course_lib.nn:softmax_loss", z, one_hot(labels, 10).astype(np.float32), as_tensors=True)
    expect_close(got, torch_loss(z.astype(np.float64), labels), "softmax_loss of float32 (8, 10) logits", rtol=1e-5,
                 atol=1e-5)


@task("softmax_loss", weight=2)
@pytest.mark.parametrize("n,k", [(5, 3), (2, 6)])
def test_softmax_loss_is_a_graph_of_ops(student, rng, n, k):
    """softmax_loss is built from ops on its inputs (so autograd can differentiate it): its graph, evaluated
    again at new logits, gives the loss there"""
    # Only forward computations run here: the loss's gradient follows from the ops' own gradients,
    # which are graded in their own tasks (this check does not depend on them).
    z, z2, labels = rng.standard_normal((n, k)) * 2, rng.standard_normal((n, k)) * 2, rng.integers(0, k, n)
    y = one_hot(labels, k)
    got = student.call("course_lib.nn:softmax_loss", z, y, as_tensors=True, reevaluate=[z2, y])
    # Both values are compared before the first failure is raised: a right one is evidence too
    # (a mistake that would spoil it is not named, diagnosis.py).
    out_failure = None
    try:
        expect_close(got["out"], torch_loss(z, labels), f"softmax_loss, N={n}, K={k}", rtol=1e-10, atol=1e-12)
    except AssertionError as err:
        out_failure = err
    try:
        expect_close(got["again"], torch_loss(z2, labels), f"softmax_loss, N={n}, K={k}, its graph evaluated again "
                                                             f"at new logits", rtol=1e-10, atol=1e-12)
    except AssertionError:
        if out_failure is not None:
            raise out_failure from None
        if np.allclose(got["again"], got["out"]):
            raise AssertionError(f"softmax_loss, N={n}, K={k}: the loss is not connected to the logits in the graph "
                                 f"(its graph, evaluated again at other logits, gives the same value): build it with "
                                 f"ops on Tensors, not with NumPy on .numpy() values, so that loss.backward() reaches "
                                 f"the logits") from None
        raise
    if out_failure is not None:
        raise out_failure


# ---------------------------------------------------------------------------------------------
# Reverse mode by hand: a = 2, b = 3, c = a*a, d = a*b, e = c + d, f = e*d. The answers are
# notebook variables: graph_order, the names in the order the backward pass handles them ("f"
# first), and graph_adjoints, {name: df/d(name)}. Any order the graph's arrows allow is right; the
# adjoints come from PyTorch's autograd, not from constants here. The messages do not say the
# right values.
BY_HAND_INPUTS = {"c": ("a", "a"), "d": ("a", "b"), "e": ("c", "d"), "f": ("e", "d")}
BY_HAND_NAMES = ("a", "b", "c", "d", "e", "f")


def _by_hand_adjoints():
    a = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    c = a * a
    d = a * b
    e = c + d
    f = e * d
    nodes = dict(zip(BY_HAND_NAMES, (a, b, c, d, e, f)))
    for node in (c, d, e, f):
        node.retain_grad()
    f.backward()
    return {name: float(node.grad) for name, node in nodes.items()}


@task("reverse_by_hand")
def test_reverse_by_hand_order(student):
    """reverse mode by hand on a = 2, b = 3, c = a*a, d = a*b, e = c + d, f = e*d: the order of the backward pass"""
    order = as_list(notebook_value(student, "graph_order"), "graph_order")
    for i, name in enumerate(order):
        if type(name) is not str:
            raise AssertionError(f"graph_order[{i}]: expected a node's name (a string such as 'a'), "
                                 f"got {describe(name)}")
    if sorted(order) != sorted(BY_HAND_NAMES):
        raise AssertionError(f"graph_order: expected each of the six names {list(BY_HAND_NAMES)} exactly once, got "
                             f"{order}")
    position = {name: i for i, name in enumerate(order)}
    if all(position[user] > position[name] for user, inputs in BY_HAND_INPUTS.items() for name in inputs):
        raise AssertionError("graph_order: this is an order for the forward pass (each node after its inputs); "
                             "the question asks for the order of the backward pass, which starts at 'f'")
    for user, inputs in BY_HAND_INPUTS.items():
        for name in inputs:
            if position[user] > position[name]:
                raise AssertionError(f"graph_order: {name!r} is handled before {user!r}, which uses it, so {name!r} "
                                     f"passes its adjoint on before {user!r} has sent back its part: a node comes "
                                     f"after every node that uses it")


@task("reverse_by_hand", weight=2)
def test_reverse_by_hand_adjoints(student):
    """reverse mode by hand on a = 2, b = 3, c = a*a, d = a*b, e = c + d, f = e*d: the six adjoints df/d(name)"""
    answer = as_mapping(notebook_value(student, "graph_adjoints"), "graph_adjoints", BY_HAND_NAMES, exact=True)
    got = {name: as_float(answer[name], f"graph_adjoints[{name!r}]") for name in BY_HAND_NAMES}
    expected = _by_hand_adjoints()
    wrong = [name for name in reversed(BY_HAND_NAMES) if not np.isclose(got[name], expected[name], rtol=1e-9,
                                                                        atol=1e-9)]
    if wrong:
        which = (f"the adjoint of {wrong[0]!r} is" if len(wrong) == 1
                 else f"the adjoints of {', '.join(repr(n) for n in wrong)} are")
        raise AssertionError(f"graph_adjoints: {which} not right. "
                             f"Start from the first wrong one in the backward order: which nodes use it, and does "
                             f"every one of its uses send back its own partial adjoint?")
