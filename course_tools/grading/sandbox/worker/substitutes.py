"""The grader's substitutes inside the worker: pieces of course_lib or of the notebook replaced,
for one request, by functions that run in the grader (main.serve installs them around the
scenario; requests carry them as ``substitutes``), so that a task's check does not depend on
another task of the same notebook. No kind carries code: only values cross.
"""
from __future__ import annotations

import contextlib

from .scenarios import allowed_module
from .values import PLAIN, plain


def _op_attrs(op) -> dict:
    return {k: v for k, v in vars(op).items() if isinstance(v, PLAIN + (tuple, list))}


def _substitute(spec: dict):
    """The stand-in for one piece of course_lib, computing through ``call`` in the grader. No kind
    carries code: what the grader lends runs in the grader, and only values cross."""
    from course_lib import nd
    from course_lib.autograd import Tensor

    kind, call = spec["kind"], spec.get("function")
    if kind == "calls_back":     # fn(f, *args) -> value, where f is a function here (e.g. central_difference)
        def calls_back(f, *args, **kwargs):
            return call.calling_back(lambda *point: plain(f(*point), "the function's value"), *args, **kwargs)
        return calls_back
    if kind == "compute":        # Op.compute(self, *NDArrays) -> NDArray
        def compute(self, *arrays):
            return nd.array(call(_op_attrs(self), *[a.numpy() for a in arrays]))
        return compute
    if kind == "gradient":       # Op.gradient(self, out_grad, node) -> tuple of Tensors
        def gradient(self, out_grad, node):
            grads = call(_op_attrs(self), out_grad.numpy(), *[x.numpy() for x in node.inputs])
            return tuple(Tensor(g, requires_grad=False) for g in grads)
        return gradient
    if kind == "ndarray_method":  # NDArray.<method>(self, *args) -> NDArray
        def method(self, *args):
            return nd.array(call(self.numpy(), *args))
        return method
    if kind == "function":       # a plain function of plain values (e.g. nd.compact_strides)
        def function(*args):
            value = call(*args)
            return tuple(value) if isinstance(value, list) else value
        return function
    if kind == "reduce_recipe":  # reduce_to_shape(grad, shape) -> Tensor, built with ops (stays in the graph)
        from course_lib import ops

        def reduce_to_shape(grad, shape):
            recipe = call(list(grad.shape), list(shape))
            if recipe["axes"]:
                grad = ops.summation(grad, tuple(recipe["axes"]))
            return ops.reshape(grad, tuple(recipe["shape"])) if tuple(grad.shape) != tuple(recipe["shape"]) else grad
        return reduce_to_shape
    if kind == "slice_view":     # NDArray._slice_view(self, idxs): the view's geometry from the grader
        def _slice_view(self, idxs):
            items = idxs if isinstance(idxs, tuple) else (idxs,)
            spec = [["slice", i.start, i.stop, i.step] if isinstance(i, slice) else ["int", i] for i in items]
            shape, strides, offset = call(list(self.shape), list(self.strides), int(self.offset),
                                          int(self.handle.size), spec)
            return nd.NDArray.make(tuple(shape), strides=tuple(strides), device=self.device, handle=self.handle,
                                   offset=int(offset))
        return _slice_view
    if kind == "topo_sort":      # find_topo_sort(node_list) -> list of nodes, the order from the grader
        def find_topo_sort(node_list):
            nodes, index, stack = [], {}, list(node_list)
            while stack:
                node = stack.pop()
                if id(node) not in index:
                    index[id(node)] = len(nodes)
                    nodes.append(node)
                    stack.extend(node.inputs)
            order = call([[index[id(c)] for c in node.inputs] for node in nodes], [index[id(r)] for r in node_list])
            return [nodes[int(i)] for i in order]
        return find_topo_sort
    raise ValueError(f"unknown substitute kind {kind!r}")


class _Namespace:
    """The notebook's namespace seen as an object, so a substitute can stand in for a name in it."""

    def __init__(self, ns: dict):
        self.__dict__ = ns


@contextlib.contextmanager
def substituted(substitutes: dict | None, ns: dict | None = None):
    """Install the grader's substitutes for the duration of one call, then put back what was there.
    A target is "module:Class.attr", "module:function" or "student:name" (the notebook's own name).
    A spec marked "optional" (grading an earlier release, whose course_lib may lack the class a
    later task added) is skipped when its owner does not exist: that release's code cannot call it."""
    saved = []
    try:
        for target, spec in (substitutes or {}).items():
            module, _, path = target.partition(":")
            owner_path, _, attr = path.rpartition(".")
            if module == "student":
                if ns is None or owner_path:
                    raise ValueError(f"cannot substitute {target!r}")
                owner = _Namespace(ns)
            else:
                owner = allowed_module(module)
            try:
                for part in filter(None, owner_path.split(".")):
                    owner = getattr(owner, part)
            except AttributeError:
                if spec.get("optional") is True:
                    continue
                raise
            saved.append((owner, attr, owner.__dict__.get(attr, _MISSING)))
            setattr(owner, attr, _substitute(spec))
        yield
    finally:
        for owner, attr, old in reversed(saved):
            if old is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, old)


_MISSING = object()
