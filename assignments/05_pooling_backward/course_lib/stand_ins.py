# Generated from course_lib/stand_ins.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""Stand-ins that a visible check lends in place of another task of the same notebook
(``course_lib.checks.lent``), so that the check fails only because of its own task, and the
expected values of checks that would otherwise print the answer to a question of the notebook.

A stand-in knows the inputs of the checks that lend it, and nothing else: it is a table, not an
algorithm, so it is no way around writing the task. The tables keep their answers as short
digests (``digest``), not in the clear. The stand-in finds the answer among the few possible ones
(the sorted tuples of axes of an array, the orders of its axes). So the answers to the notebooks'
questions are not printed here. tests/test_stand_ins.py checks every entry against the reference
code.

    with lent(nd, "normalize_axes", normalize_axes):              # 01: summation, transpose
    with lent(ops.shaping, "transpose_permutation", transpose_permutation):   # 01: transpose
    with lent(ops.shaping, "reduce_to_shape", matmul_reduce_to_shape):       # 02: matmul
    assert_close(got, broadcast_copies((2, 1, 4), (5, 2, 3, 4)), ...)         # 02: broadcast_to
    with lent_matmul_reduce_to_shape(globals()):                             # 02: matmul
    with lent_topological_sort(globals()):                                   # 02: reverse mode, softmax loss
    assert scaler_example_mismatch(LossScaler) is None, ...                   # 07: loss_scaler
"""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import numbers

from .checks import lent


def digest(value: tuple) -> str:
    """A short fingerprint of a tuple of ints: what the tables below store instead of the answer."""
    return hashlib.sha256(repr(tuple(int(v) for v in value)).encode()).hexdigest()[:10]


def _recall(table: dict, key, candidates, unknown: str) -> tuple:
    if key not in table:
        raise AssertionError(unknown)
    return next(c for c in candidates if digest(c) == table[key])


def _subsets(n: int):
    """Every increasing tuple of axes of an n-dimensional array: (), (0,), (1,), ..., (0, 1, ..., n - 1)."""
    return itertools.chain.from_iterable(itertools.combinations(range(n), r) for r in range(n + 1))


# 01: the axes that the checks of summation, transpose_permutation and transpose pass to normalize_axes.
# (ndim, axes as given, an int as a 1-tuple) -> digest of the normalized axes
NORMALIZED_AXES = {
    (1, None): "91d6039a01", (1, (0,)): "91d6039a01", (2, None): "a5cabe6130", (2, (0,)): "91d6039a01",
    (2, (1,)): "28cb03b06c", (2, (0, 1)): "a5cabe6130", (2, (-2, -1)): "a5cabe6130", (3, None): "eae0f06c46",
    (3, (0,)): "91d6039a01", (3, (1,)): "28cb03b06c", (3, (2,)): "0555debc8a", (3, (-1,)): "0555debc8a",
    (3, (0, 1)): "a5cabe6130", (3, (0, 2)): "1f64673779", (3, (1, 2)): "cf4dabed2c", (3, (2, 0)): "1f64673779",
    (3, (-1, 0)): "1f64673779", (3, (-1, -3)): "1f64673779", (3, (-2, -1)): "cf4dabed2c",
    (3, (0, 1, 2)): "eae0f06c46", (4, (0, 1)): "a5cabe6130", (4, (2, 3)): "dc4307c085", (4, (-2, -1)): "dc4307c085",
    (4, (1, 3)): "0567007dc5", (4, (3, 1)): "0567007dc5", (4, (0, 3)): "1f1868f069", (4, (0, -1)): "1f1868f069",
    (4, (-2, 0)): "1f64673779", (4, (0, 2)): "1f64673779", (4, (2, 0)): "1f64673779",
}


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """01's normalize_axes for the axes of the checks that lend it, with its errors."""
    key = axis if axis is None else (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    for ax in key or ():
        if not -ndim <= ax < ndim:
            raise ValueError(f"axis {ax} is out of range for an array with {ndim} dimensions")
    if key is not None and len({ax % ndim for ax in key}) != len(key):
        raise ValueError(f"repeated axis in {key}")
    return _recall(NORMALIZED_AXES, (ndim, key), _subsets(ndim),
                   f"the checks' stand-in for normalize_axes knows the axes of the checks only, not {axis!r} "
                   f"for {ndim} dimensions: pass it self.axes, or the tuple it returned")


# 01: the axes that the check of transpose passes to transpose_permutation.
# (axes, ndim) -> digest of the order of axes for NDArray.permute
PERMUTATIONS = {
    (None, 2): "e348257ed6", (None, 3): "c816d7a9d0", (None, 4): "9df149b780", ((0, 2), 3): "04eaa0215c",
    ((0, 1), 3): "d8e4e3e5a5", ((1, 2), 3): "c816d7a9d0", ((2, 0), 3): "04eaa0215c", ((-1, -3), 3): "04eaa0215c",
    ((0, 1), 4): "57cd5bd4fe",
}


def transpose_permutation(axes, ndim: int) -> tuple[int, ...]:
    """01's transpose_permutation for the axes of the transpose check."""
    if ndim < 2:
        raise ValueError(f"transpose needs an array with at least 2 dimensions, got one with {ndim} (axes={axes!r})")
    key = (axes if axes is None else tuple(axes), ndim)
    return _recall(PERMUTATIONS, key, itertools.permutations(range(ndim)),
                   f"the check's stand-in for transpose_permutation knows the axes of the check only, not "
                   f"{axes!r} for {ndim} dimensions: pass it self.axes")


# 02: what matmul's gradient asks reduce_to_shape to do in the check of backward_matmul.
# (gradient shape, target shape) -> digest of the axes summed before reshaping to the target
MATMUL_SUMMED_AXES = {
    ((8, 4, 5), (4, 5)): "91d6039a01", ((6, 3, 4), (3, 4)): "91d6039a01", ((6, 3, 4), (1, 3, 4)): "91d6039a01",
    ((2, 5, 3, 4), (2, 1, 3, 4)): "28cb03b06c", ((2, 5, 4, 2), (5, 4, 2)): "91d6039a01",
}


def matmul_reduce_to_shape(grad, shape):
    """02's reduce_to_shape for the shapes that matmul's gradient meets in the check of backward_matmul."""
    from .ops import reshape, summation

    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    axes = _recall(MATMUL_SUMMED_AXES, (tuple(grad.shape), shape), _subsets(len(grad.shape)),
                   f"matmul's gradient asked reduce_to_shape to take a {grad.shape} gradient to {shape}: the "
                   f"gradient of a matmul with these inputs never has that shape")
    return reshape(summation(grad, axes), shape)


def lent_matmul_reduce_to_shape(namespace: dict) -> contextlib.ExitStack:
    """matmul_reduce_to_shape lent as reduce_to_shape under the notebook's name (``namespace``, its
    globals()) and course_lib's, for 02's check of backward_matmul."""
    from . import ops
    from .ops import shaping

    stack = contextlib.ExitStack()
    for owner in (namespace, shaping, ops):
        stack.enter_context(lent(owner, "reduce_to_shape", matmul_reduce_to_shape))
    return stack


# 02: the checks of reverse_mode and softmax_loss lend a stand-in for find_topo_sort (the task
# topo_sort) that needs no graph search. While a check runs, every node an op makes is recorded;
# an input always exists before the op that uses it, so the order of creation is already a
# topological order.
_created_nodes: list = []


def find_topo_sort_by_creation(node_list) -> list:
    """The nodes ``node_list`` depends on, in the order they were created while the stand-in was lent
    (leaves made before it have no inputs, so they may come anywhere before their users)."""
    found, stack = {}, list(node_list)
    while stack:
        node = stack.pop()
        if id(node) not in found:
            found[id(node)] = node
            stack.extend(node.inputs)
    rank = {id(node): i for i, node in enumerate(_created_nodes)}
    return sorted(found.values(), key=lambda node: rank.get(id(node), -1))


def lent_topological_sort(namespace: dict) -> contextlib.ExitStack:
    """Record the creation of nodes and lend find_topo_sort_by_creation as find_topo_sort, under the
    notebook's name (``namespace``, its globals()) and course_lib's, for the duration of a with block."""
    from . import autograd

    make_from_op = autograd.Value.__dict__["make_from_op"].__func__

    def recording_make_from_op(cls, op, inputs):
        node = make_from_op(cls, op, inputs)
        _created_nodes.append(node)
        return node

    _created_nodes.clear()
    stack = contextlib.ExitStack()
    stack.enter_context(lent(autograd.Value, "make_from_op", classmethod(recording_make_from_op)))
    stack.enter_context(lent(namespace, "find_topo_sort", find_topo_sort_by_creation))
    stack.enter_context(lent(autograd, "find_topo_sort", find_topo_sort_by_creation))
    return stack


def reevaluate(output, leaf, value):
    """``output``'s graph evaluated again, op by op, with ``leaf``'s data replaced by ``value`` (an
    array): a result built from ops on Tensors follows the new value, one built from raw arrays does
    not. Call it inside lent_topological_sort(...), where the graph was built."""
    import numpy as np

    from . import nd

    data = {id(leaf): nd.array(np.asarray(value), dtype=leaf.dtype)}
    for node in find_topo_sort_by_creation([output]):
        if id(node) not in data:
            data[id(node)] = (node.realize_cached_data() if node.op is None
                              else node.op.evaluate(*[data[id(x)] for x in node.inputs]))
    return data[id(output)]


def broadcast_copies(shape, broadcast_shape):
    """How many copies of each element of an array of ``shape`` ``np.broadcast_to(.., broadcast_shape)``
    makes, counted by NumPy: what reduce_to_shape of all ones must give (02, backward_broadcast_to)."""
    import numpy as np

    shape = tuple(shape)
    size = int(np.prod(shape, dtype=np.int64))
    index = np.broadcast_to(np.arange(size).reshape(shape), broadcast_shape)
    return np.bincount(index.ravel(), minlength=size).reshape(shape).astype(np.float64)


# 07: loss_scaler's question 3 works LossScaler.update on paper. Its check runs the same example
# (and one with other factors and a floor) and compares each step with these digests of
# (scale_value, good_steps, skipped_steps), so that the check's code is not the table the question
# asks for. name -> (LossScaler's arguments, the steps' flags (False: an overflow), digests per step)
SCALER_EXAMPLES = {
    "question 3's example (init_scale 8, growth_interval 3)": (
        {"init_scale": 8.0, "growth_interval": 3}, (False, True, True, True, True, False),
        ("681fe41135", "d5471698c6", "88d7cb07dc", "84fd272faf", "000f102bb2", "e3e625bc4e")),
    "init_scale 64, growth_factor 4, backoff_factor 0.25, growth_interval 2, min_scale 2": (
        {"init_scale": 64.0, "growth_factor": 4.0, "backoff_factor": 0.25, "growth_interval": 2, "min_scale": 2.0},
        (True,) * 5 + (False,) * 6,
        ("87a4391287", "60d39bcf09", "c01dc7d053", "eccd2036f3", "89fd7e2479", "8bdb943827", "4b5bd1e589",
         "a10f16334b", "a911119fc8", "c3fd56b87c", "b6a308e503")),
}


def scaler_state(scaler) -> tuple[float, int, int]:
    """(scale_value, good_steps, skipped_steps) of a LossScaler, as plain Python numbers."""
    try:
        return float(scaler.scale_value), int(scaler.good_steps), int(scaler.skipped_steps)
    except (TypeError, ValueError) as error:
        raise AssertionError(f"scale_value must be a number and good_steps, skipped_steps whole numbers; got "
                             f"{scaler.scale_value!r}, {scaler.good_steps!r}, {scaler.skipped_steps!r}") from error


def _state_digest(state: tuple[float, int, int]) -> str:
    return hashlib.sha256(repr(state).encode()).hexdigest()[:10]


def scaler_example_mismatch(scaler_class) -> str | None:
    """The examples of SCALER_EXAMPLES run through ``scaler_class.update``: None when every step
    leaves the state the rules give, else a message that names the example, its first wrong step and
    the state the student's scaler is in (not the state it should be in: that is the question's answer)."""
    for name, (arguments, steps, states) in SCALER_EXAMPLES.items():
        scaler = scaler_class(**arguments)
        for step, (finite, expected) in enumerate(zip(steps, states), start=1):
            scaler.update(finite)
            state = scaler_state(scaler)
            if _state_digest(state) != expected:
                flags = ", ".join("finite" if f else "overflow" for f in steps)
                return (f"update, {name}, steps {flags}: after step {step} ({'finite' if finite else 'an overflow'}) "
                        f"your scaler is at (scale_value, good_steps, skipped_steps) = {state}, which is not what "
                        f"the rules give. Work the steps on paper and compare them one by one with what your update does")
    return None


def scaler_flags_overflows(scaler_class) -> bool:
    """Whether ``scaler_class.unscale`` reports False for an inf in the first parameter and for a NaN
    in the last one, and True when every gradient is finite."""
    import numpy as np

    from .autograd import Tensor
    from .nn import Parameter

    flags = []
    for values in ([[1.0, np.inf], [1.0, 2.0]], [[1.0, 2.0], [np.nan, 1.0]], [[1.0, 2.0], [3.0, 4.0]]):
        params = [Parameter(np.ones(2), dtype="float16") for _ in values]
        for p, v in zip(params, values):
            p.grad = Tensor(np.array(v), dtype="float16", requires_grad=False)
        flags.append(bool(scaler_class(init_scale=2.0).unscale(params)[1]))
    return flags == [False, False, True]


def scaler_is_right(scaler_class) -> bool:
    """Whether a LossScaler gives question 3's example and flags overflows (07's precision check holds
    back the parts that need a right scaler until it does: a scaler bug is loss_scaler's)."""
    try:
        return scaler_example_mismatch(scaler_class) is None and scaler_flags_overflows(scaler_class)
    except Exception:
        return False
