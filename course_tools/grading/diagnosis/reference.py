"""Reference pieces a hidden check lends the student's code, so each task is graded on its own.

A check of one task often needs another task of the same notebook to run: conv's backward is
built from conv itself, reverse mode needs a topological sort, nn.Conv needs the op. Those
pieces run here, in the grader (the reference course_lib of this repository), and reach the
worker only as functions that call back (worker/scenarios.py, "substitutes"), valid for the one
request that offers them: their code never enters the student's process.

    student.forward("Conv", attrs, x, k)                                  # the student's own conv
    student.gradient("Conv", attrs, [x, k], g, substitutes=conv_substitutes(student))
                                                          # their backward, on the grader's conv
"""
from __future__ import annotations

import numpy as np

from course_lib import nd, ops
from course_lib.autograd import Tensor

from ..views import GRADER_READ_ELEMENTS


def _op(name: str, attrs: dict):
    cls = getattr(ops, name)
    op = cls.__new__(cls)
    op.__dict__.update(attrs)
    return op


def op_compute(name: str):
    """``ops.<name>.compute`` of the reference, as a function of (attrs, *arrays) -> array."""
    def compute(attrs, *arrays):
        arrays = [np.asarray(a) for a in arrays]
        return _op(name, attrs).compute(*[nd.array(a, dtype=str(a.dtype)) for a in arrays]).numpy()
    return compute


def op_gradient(name: str):
    """``ops.<name>.gradient`` of the reference, as (attrs, out_grad, *inputs) -> tuple of arrays."""
    def gradient(attrs, out_grad, *inputs):
        op = _op(name, attrs)
        tensors = [Tensor(np.asarray(x), dtype=str(np.asarray(x).dtype)) for x in inputs]
        node = Tensor.make_from_op(op, tensors)
        upstream = Tensor(np.asarray(out_grad), dtype=str(np.asarray(out_grad).dtype), requires_grad=False)
        return tuple(g.numpy() for g in op.gradient_as_tuple(upstream, node))
    return gradient


def ndarray_method(name: str):
    """``NDArray.<name>`` of the reference, as (array, *args) -> array."""
    def method(array, *args):
        array = np.asarray(array)
        return getattr(nd.array(array, dtype=str(array.dtype)), name)(*args).numpy()
    return method


def topo_sort(inputs: list, roots: list) -> list[int]:
    """A topological order (each node after its inputs) of the nodes reachable from ``roots``,
    given each node's inputs as indices."""
    order, done, on_stack = [], set(), set()
    for root in map(int, roots):
        if root in done:
            continue
        stack = [(root, iter(inputs[root]))]
        on_stack.add(root)
        while stack:
            node, children = stack[-1]
            for child in children:
                child = int(child)
                if child not in done and child not in on_stack:
                    on_stack.add(child)
                    stack.append((child, iter(inputs[child])))
                    break
            else:
                stack.pop()
                on_stack.discard(node)
                done.add(node)
                order.append(node)
    return order


# ------------------------------------------------------------------------------ ready-made sets
def topo_sort_substitutes(student) -> dict:
    """find_topo_sort, in course_lib and under the notebook's own name, by the grader."""
    return {**student.substitute("course_lib.autograd:find_topo_sort", "topo_sort", topo_sort),
            **student.substitute("student:find_topo_sort", "topo_sort", topo_sort)}


def compute_substitutes(student, *names: str) -> dict:
    """``ops.<name>.compute`` by the grader, for each op name."""
    out = {}
    for name in names:
        out.update(student.substitute(f"course_lib.ops:{name}.compute", "compute", op_compute(name)))
    return out


def gradient_substitutes(student, *names: str) -> dict:
    """``ops.<name>.gradient`` by the grader, for each op name."""
    out = {}
    for name in names:
        out.update(student.substitute(f"course_lib.ops:{name}.gradient", "gradient", op_gradient(name)))
    return out


def reduce_recipe(grad_shape: list, shape: list) -> dict:
    """How reduce_to_shape sums a gradient of ``grad_shape`` down to ``shape``: the axes to sum
    (new leading axes, and axes broadcast from size 1), then the shape to reshape to."""
    lead = len(grad_shape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and grad_shape[lead + i] != 1]
    return {"axes": axes, "shape": list(shape)}


def reduce_to_shape_substitutes(student) -> dict:
    """reduce_to_shape (02's backward_broadcast_to), built with ops from the grader's recipe."""
    return {**student.substitute("course_lib.ops.shaping:reduce_to_shape", "reduce_recipe", reduce_recipe),
            **student.substitute("student:reduce_to_shape", "reduce_recipe", reduce_recipe)}


def calls_back_substitutes(student, targets: list[str], fn) -> dict:
    """``fn(f, *args)`` by the grader for each target, where ``f`` is a function of the student's
    process (central_difference's f): the grader runs fn and asks the worker for f's value at each
    point fn probes, so f's values cross and fn's code does not."""
    out = {}
    for target in targets:
        out.update(student.substitute(target, "calls_back", fn))
    return out


def slice_view(shape, strides, offset, handle_size, spec):
    """The geometry (shape, strides, offset) of ``a[index]`` for a view with this geometry, by the
    reference NDArray; ``spec`` lists the index items as ["slice", start, stop, step] or ["int", i]."""
    index = tuple(slice(*item[1:]) if item[0] == "slice" else int(item[1]) for item in spec)
    if not 0 <= int(handle_size) <= GRADER_READ_ELEMENTS:  # the buffer stands in for the worker's: checked first
        raise ValueError(f"a view over a buffer of {int(handle_size)} elements: the grader works on at most "
                         f"{GRADER_READ_ELEMENTS}")
    try:
        view = nd.NDArray.make(tuple(shape), strides=tuple(strides), handle=np.zeros(int(handle_size)),
                               offset=int(offset))._slice_view(index)
    except IndexError as err:  # crosses back as a ValueError, the nearest kind the worker re-raises
        raise ValueError(str(err)) from None
    return [list(view.shape), list(view.strides), int(view.offset)]
