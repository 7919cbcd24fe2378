"""The graph and reverse mode: topological order, accumulation, backward's arguments, higher
order, detach / no_grad / lazy mode, devices, operator overloads and dtypes."""
import numpy as np
import pytest
import torch

import course_lib
from course_lib import autograd, ops
from course_lib.autograd import Tensor, find_topo_sort, no_grad
from conftest import (FLOAT_DTYPES, ORACLE_DTYPES, assert_close, check_against_torch, cuda_device,
                      tensor, to_torch)


# ---------------------------------------------------------------------------- topological order
def diamond(device):
    """a -> (b, c) -> d -> e, with a used by both branches and e reusing a."""
    a = tensor([1.0, 2.0], device)
    b = ops.mul_scalar(a, 2.0)
    c = ops.add_scalar(a, 1.0)
    d = ops.multiply(b, c)
    e = ops.add(d, a)
    return a, b, c, d, e


def assert_topological(order):
    position = {id(node): i for i, node in enumerate(order)}
    assert len(position) == len(order), "a node appears twice"
    for node in order:
        for child in node.inputs:
            assert id(child) in position, "an input of a node is missing from the order"
            assert position[id(child)] < position[id(node)], "a node comes before one of its inputs"


def test_topo_sort_of_a_diamond_puts_every_node_after_its_inputs(device):
    a, b, c, d, e = diamond(device)
    order = find_topo_sort([e])
    assert {id(n) for n in order} == {id(n) for n in (a, b, c, d, e)}
    assert order[-1] is e
    assert_topological(order)


def test_topo_sort_of_several_roots_lists_shared_nodes_once(device):
    a, b, c, d, e = diamond(device)
    order = find_topo_sort([c, e, b])
    assert len(order) == 5
    assert_topological(order)


def test_deep_graph_beyond_the_recursion_limit(device):
    x = tensor([1.0], device)
    y = x
    for _ in range(3000):
        y = ops.add_scalar(y, 0.001)
    assert len(find_topo_sort([y])) == 3001
    y.backward(tensor([1.0], device, requires_grad=False))
    np.testing.assert_array_equal(x.grad.numpy(), [1.0])


# ---------------------------------------------------------------------------- reverse mode
def test_gradient_accumulates_over_every_use(device):
    x = tensor([1.0, -2.0, 3.0], device)
    ops.summation(x * x + x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, -3.0, 7.0])   # 2x + 1


def test_diamond_gradient_matches_torch(device):
    a, b, c, d, e = diamond(device)
    e.backward(tensor([1.0, 1.0], device, requires_grad=False))
    a_t = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    ((a_t * 2.0) * (a_t + 1.0) + a_t).sum().backward()
    assert_close(a.grad, a_t.grad)


def test_backward_of_a_non_scalar_without_out_grad_raises_naming_the_shape(device):
    y = ops.exp(tensor(np.ones((2, 3)), device))
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        y.backward()


def test_backward_with_out_grad_of_the_wrong_shape_raises(device):
    y = ops.exp(tensor(np.ones((2, 3)), device))
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        y.backward(tensor(np.ones((3, 2)), device, requires_grad=False))


def test_backward_of_a_one_element_tensor_needs_no_out_grad(device):
    x = tensor(np.array([[2.0]]), device)
    ops.power_scalar(x, 3).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[12.0]])


@pytest.mark.parametrize("dtype", ORACLE_DTYPES)
def test_backward_with_out_grad_matches_torch(device, rng, dtype):
    check_against_torch(lambda x, w: ops.tanh(ops.matmul(x, w)) * x,
                        lambda x, w: torch.tanh(x @ w) * x,
                        [rng.standard_normal((4, 3)), rng.standard_normal((3, 3))], dtype, device, rng)


def test_leaf_that_does_not_require_grad_gets_no_gradient(device):
    x = tensor([1.0, 2.0], device)
    c = tensor([3.0, 4.0], device, requires_grad=False)
    ops.summation(x * c).backward()
    assert c.grad is None
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


# ---------------------------------------------------------------------------- higher order
def test_gradient_of_gradient_of_cube_matches_torch(device):
    values = np.array([-1.5, 0.5, 2.0])
    x = tensor(values, device)
    ops.summation(x ** 3).backward(create_graph=True)
    first = x.grad
    assert first.requires_grad
    assert_close(first, 3 * values ** 2)
    x.grad = None
    ops.summation(first).backward()
    x_t = to_torch(values, "float64", requires_grad=True)
    (g,) = torch.autograd.grad((x_t ** 3).sum(), x_t, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x_t)
    assert_close(x.grad, gg)
    assert_close(x.grad, 6 * values)


def test_without_create_graph_gradients_are_constants(device):
    x = tensor([1.0, 2.0], device)
    ops.summation(x ** 3).backward()
    assert not x.grad.requires_grad and x.grad.is_leaf()


# ---------------------------------------------------------------------------- detach / no_grad / lazy
def test_detach_cuts_the_graph(device):
    x = tensor([1.0, 2.0], device)
    y = ops.exp(x)
    d = y.detach()
    assert not d.requires_grad and d.is_leaf() and d.inputs == []
    np.testing.assert_array_equal(d.numpy(), y.numpy())
    ops.summation(ops.multiply(d, x)).backward()
    assert_close(x.grad, np.exp([1.0, 2.0]))


def test_no_grad_records_no_graph(device):
    x = tensor([1.0, 2.0], device)
    with no_grad():
        y = ops.exp(x) * x + 1.0
        assert not autograd.is_grad_enabled()
    assert autograd.is_grad_enabled()
    assert not y.requires_grad and y.inputs == [] and y.op is None
    assert_close(y, np.exp([1.0, 2.0]) * [1.0, 2.0] + 1.0)
    z = ops.exp(x)
    assert z.requires_grad and z.inputs == [x]


def test_no_grad_is_restored_after_an_exception(device):
    with pytest.raises(RuntimeError):
        with no_grad():
            raise RuntimeError("boom")
    assert autograd.is_grad_enabled()


def lazy_and_eager_example(device, values):
    x = tensor(values, device)
    w = tensor(np.arange(6.0).reshape(3, 2) / 6.0, device)
    y = ops.logsumexp(ops.relu(ops.matmul(x, w)) + ops.exp(ops.summation(x, 1)).reshape((4, 1)).broadcast_to((4, 2)), 1)
    ops.summation(y).backward()
    return y.numpy(), x.grad.numpy(), w.grad.numpy()


def test_lazy_mode_gives_the_same_results(device, rng):
    values = rng.standard_normal((4, 3))
    eager = lazy_and_eager_example(device, values)
    previous = autograd.LAZY_MODE
    try:
        autograd.LAZY_MODE = True
        x = tensor(values, device)
        y = ops.exp(x)
        assert y.cached_data is None, "lazy mode must not compute when the op is built"
        lazy = lazy_and_eager_example(device, values)
    finally:
        autograd.LAZY_MODE = previous
    for got, expected in zip(lazy, eager):
        assert_close(got, expected)


@pytest.mark.cuda
def test_ops_on_two_devices_raise():
    cuda = cuda_device()
    a = tensor([1.0, 2.0], course_lib.cpu())
    b = tensor([1.0, 2.0], cuda)
    with pytest.raises(ValueError, match="cuda"):
        ops.add(a, b)


# ---------------------------------------------------------------------------- operator overloads
def swap_last_axes(y):
    """y transposed, for a NumPy array, a torch tensor or a course_lib Tensor."""
    if isinstance(y, np.ndarray):
        return y.T
    if isinstance(y, torch.Tensor):
        return y.transpose(-2, -1)
    return y.transpose()


OVERLOADS = [
    ("x+y", lambda x, y: x + y), ("x-y", lambda x, y: x - y), ("x*y", lambda x, y: x * y),
    ("x/y", lambda x, y: x / y), ("x**y", lambda x, y: x ** y), ("x@yT", lambda x, y: x @ swap_last_axes(y)),
    ("2-x", lambda x, y: 2 - x), ("x-2", lambda x, y: x - 2), ("2/x", lambda x, y: 2 / x),
    ("x/2", lambda x, y: x / 2), ("x**2", lambda x, y: x ** 2), ("-x", lambda x, y: -x),
    ("2*x", lambda x, y: 2 * x), ("x*2", lambda x, y: x * 2), ("2+x", lambda x, y: 2 + x),
    ("x+2", lambda x, y: x + 2), ("2.5-x/y*3", lambda x, y: 2.5 - x / y * 3),
]


@pytest.mark.parametrize("name, fn", OVERLOADS, ids=[n for n, _ in OVERLOADS])
def test_operator_overloads_match_numpy(device, rng, name, fn):
    xs, ys = rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    out = fn(tensor(xs, device), tensor(ys, device))
    assert isinstance(out, Tensor)
    assert_close(out, fn(xs, ys))


@pytest.mark.parametrize("name, fn", OVERLOADS, ids=[n for n, _ in OVERLOADS])
def test_operator_overloads_gradients_match_torch(device, rng, name, fn):
    check_against_torch(fn, fn, [rng.uniform(0.5, 2.0, (3, 4)), rng.uniform(0.5, 2.0, (3, 4))],
                        "float64", device, rng)


# ---------------------------------------------------------------------------- dtypes
DTYPE_GRAPHS = [
    ("arithmetic", lambda x, w: ops.summation((x * 2 + 1) / 3 - x ** 2 + 2 / (x + 3))),
    ("exp-log-tanh-relu", lambda x, w: ops.summation(ops.log(ops.exp(x) + 1) * ops.tanh(x) + ops.relu(x))),
    ("matmul-broadcast", lambda x, w: ops.summation(ops.matmul(x, w) + ops.broadcast_to(ops.summation(w, 0), (2, 3)))),
    ("logsumexp", lambda x, w: ops.summation(ops.logsumexp(x, 1))),
    ("reshape-transpose-flip-dilate", lambda x, w: ops.summation(
        ops.dilate(ops.flip(ops.transpose(ops.reshape(x, (3, 2))), (0,)), (1,), 1) * 2)),
    ("stack-split", lambda x, w: ops.summation(ops.stack(ops.split(x, 0).tuple(), 1) * 3)),
    ("conv", lambda x, w: ops.summation(ops.conv(ops.reshape(x, (1, 2, 3, 1)), ops.reshape(w, (1, 1, 1, 9)), padding=1))),
    ("pooling", lambda x, w: ops.summation(ops.max_pool2d(ops.reshape(x, (1, 2, 3, 1)), 2, stride=1)
                                           + ops.avg_pool2d(ops.reshape(x, (1, 2, 3, 1)), 2, stride=1))),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name, fn", DTYPE_GRAPHS, ids=[n for n, _ in DTYPE_GRAPHS])
def test_dtype_is_kept_through_ops_and_backward(device, rng, dtype, name, fn):
    xs, ws = rng.uniform(0.2, 1.0, (2, 3)), rng.uniform(-1.0, 1.0, (3, 3))
    x, w = tensor(xs, device, dtype), tensor(ws, device, dtype)
    out = fn(x, w)
    assert out.dtype == dtype
    out.backward()
    for leaf in (x, w):
        if leaf.grad is not None:
            assert leaf.grad.dtype == dtype, f"gradient dtype {leaf.grad.dtype}, expected {dtype}"
    assert x.grad is not None
    # The float64 graph is the reference for the lower precisions.
    x64, w64 = tensor(xs, device, "float64"), tensor(ws, device, "float64")
    fn(x64, w64).backward()
    assert_close(out, fn(tensor(xs, device), tensor(ws, device)), dtype)
    assert_close(x.grad, x64.grad, dtype)


def test_tensor_from_a_list_is_float32(device):
    x = Tensor([[1, 2], [3, 4]], device=device)
    assert x.dtype == "float32" and x.requires_grad


def test_integer_tensors_do_not_require_grad(device):
    assert not Tensor(np.arange(3), device=device).requires_grad
