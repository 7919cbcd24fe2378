"""Misconceptions of 03_ndarray: wrong view arithmetic, replayed on a small model of NDArray.

``_View`` is an NDArray reduced to its four numbers (a flat buffer, shape, strides, offset, all in
elements). A misconception replays the steps of an ``ndarray_steps`` request on it with one method
written wrongly and the others right, and reads the values the final view stands for, as the
grader reads the student's (a view that reaches outside its buffer gives no values: no evidence).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from course_tools.grading.api import (Call, Misconception, Probe, StridedView, gradient_call, gradient_of,
                                      in_dtype, notebook_place, request_call, view_of)

NOTEBOOK = "03_ndarray"


def _compact_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(tuple(shape)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@dataclass(frozen=True)
class _View:
    buffer: np.ndarray   # flat
    shape: tuple
    strides: tuple
    offset: int

    @staticmethod
    def of(value) -> "_View":
        if isinstance(value, StridedView):
            return _View(np.array(value.buffer).reshape(-1), tuple(value.shape), tuple(value.strides),
                         int(value.offset))
        a = np.asarray(value)
        return _View(a.reshape(-1).copy(), a.shape, _compact_strides(a.shape), 0)

    def index(self) -> np.ndarray:
        """The buffer position of every element; IndexError outside the buffer."""
        index = np.full(self.shape, self.offset, dtype=np.int64)
        for axis, (n, s) in enumerate(zip(self.shape, self.strides)):
            along = [n if i == axis else 1 for i in range(len(self.shape))]
            index = index + (np.arange(n, dtype=np.int64) * s).reshape(along)
        if index.size and (index.min() < 0 or index.max() >= self.buffer.size):
            raise IndexError("the view reaches outside its buffer")
        return index

    def values(self) -> np.ndarray:
        return self.buffer[self.index()]

    def compact(self) -> "_View":
        return _View.of(self.values())


def _slices(view: _View, items) -> list[slice]:
    """The index of a step (ints keep their axis, as in needle) as normalised slices."""
    items = [tuple(s) if isinstance(s, list) else s for s in items]
    items += [(None, None, None)] * (len(view.shape) - len(items))
    out = []
    for item, n in zip(items, view.shape):
        if isinstance(item, int):
            i = item % n
            out.append(slice(i, i + 1, 1))
        else:
            out.append(slice(*slice(*item).indices(n)))
    return out


def getitem(view: _View, items, step_in_strides: bool = True) -> _View:
    offset, shape, strides = view.offset, [], []
    for sl, stride in zip(_slices(view, items), view.strides):
        length = len(range(sl.start, sl.stop, sl.step))
        if length > 0:
            offset += sl.start * stride
        shape.append(length)
        strides.append(stride * sl.step if step_in_strides else stride)
    return _View(view.buffer, tuple(shape), tuple(strides), offset)


def flip(view: _View, axes, keep_offset: bool = True) -> _View:
    axes = [axes] if isinstance(axes, int) else list(axes)
    axes = sorted({a % len(view.shape) for a in axes})
    offset, strides = (view.offset if keep_offset else 0), list(view.strides)
    for ax in axes:
        offset += (view.shape[ax] - 1) * view.strides[ax]
        strides[ax] = -view.strides[ax]
    return _View(view.buffer, view.shape, tuple(strides), offset).compact()


def pad(view: _View, widths, value=0.0, after_before: bool = True) -> _View:
    widths = [tuple(int(p) for p in pair) for pair in widths]
    out = np.full(tuple(n + b + a for n, (b, a) in zip(view.shape, widths)), value, dtype=view.buffer.dtype)
    starts = [b if after_before else 0 for b, _ in widths]
    out[tuple(slice(s, s + n) for s, n in zip(starts, view.shape))] = view.values()
    return _View.of(out)


def _setitem(view: _View, index, value, step_in_strides: bool) -> _View:
    target = getitem(view, index, step_in_strides)
    buffer = view.buffer.copy()
    buffer[target.index()] = np.asarray(value).reshape(target.shape) if np.ndim(value) else value
    return replace(view, buffer=buffer)


def run_steps(array, steps, **wrong) -> dict:
    """The values after ``steps`` (as in scenarios.ndarray_steps), with the methods named in
    ``wrong`` (getitem's ``step_in_strides``, flip's ``keep_offset``, pad's ``after_before``) set to
    the misconception's version."""
    view = _View.of(array)
    step_in_strides = wrong.get("step_in_strides", True)
    for name, *args in steps:
        if name == "getitem":
            view = getitem(view, args[0], step_in_strides)
        elif name == "setitem":
            view = _setitem(view, args[0], args[1], step_in_strides)
        elif name == "flip":
            view = flip(view, args[0], wrong.get("keep_offset", True))
        elif name == "pad":
            view = pad(view, args[0], args[1] if len(args) > 1 else 0.0, wrong.get("after_before", True))
        elif name == "compact":
            view = view.compact()
        elif name == "permute":
            axes = [a % len(view.shape) for a in args[0]]
            view = replace(view, shape=tuple(view.shape[a] for a in axes), strides=tuple(view.strides[a] for a in axes))
        else:
            raise ValueError(f"no model of the step {name!r}")
    return {"values": view.values()}


def _steps_misconception(method: str, **wrong):
    def compute(call: Call):
        if call.scenario != "ndarray_steps" or not any(step[0] == method for step in call.args[1]):
            return None  # the mistake is in `method`: other steps alone are no evidence
        array, steps = call.args
        return run_steps(array, steps, **wrong)
    return compute


def _dilate(g: np.ndarray, axes, d: int) -> np.ndarray:
    axes = {a % g.ndim for a in ((axes,) if isinstance(axes, int) else axes)}
    out = np.zeros(tuple(n * (d + 1) if i in axes else n for i, n in enumerate(g.shape)), dtype=g.dtype)
    out[tuple(slice(None, None, d + 1) if i in axes else slice(None) for i in range(g.ndim))] = g
    return out


def undilate_gradient_not_cropped(call: Call):
    found = gradient_of(call, "UnDilate")
    if found is None:
        return None
    attrs, _, g = found
    # dilate makes n_out * (d + 1) entries; the input had n, which need not be a multiple of d + 1
    return [in_dtype(_dilate(g, attrs["axes"], attrs["dilation"]), g)]


def _where(section: int, title: str, more: str = "") -> str:
    return notebook_place(f"section {section}", NOTEBOOK, title, more)


MISCONCEPTIONS = [
    Misconception(
        "ndarray_getitem", "slice_step_ignored_in_strides", "the slice's step is left out of the stride",
        "Your view has the right shape and the right offset, but keeps the old stride where a slice has a step: "
        "a[::2] must move 2 elements of the original for each step of the view, so the new stride is "
        "stride * step (negative for a negative step). With the old stride the view reads neighbouring "
        "elements instead of every step-th one (and setitem writes to them).",
        _where(3, "Slicing with steps; an integer index keeps its axis"),
        _steps_misconception("getitem", step_in_strides=False)),
    Misconception(
        "ndarray_flip", "flip_ignores_existing_offset", "flip starts from offset 0 instead of the array's offset",
        "Your flip computes the new offset as if the array started at the beginning of its buffer. For a fresh "
        "array that is true, but a slice such as a[1:3] starts inside the buffer, at its own offset. The flipped "
        "view starts at the *last* element of each flipped axis: the array's offset plus (n - 1) * stride for "
        "each flipped axis.",
        _where(5, "flip: negative strides"), _steps_misconception("flip", keep_offset=False)),
    Misconception(
        "ndarray_pad", "pad_ignores_before", "the array is written at the start of the padded one",
        "Your pad makes a result of the right shape but copies the array into its first n positions along each "
        "axis, so all the padding ends up after it. The `before` padding comes first: along each axis the array "
        "goes to positions before ... before + n - 1.",
        _where(6, "pad"), _steps_misconception("pad", after_before=False)),
    Misconception(
        "op_undilate", "undilate_gradient_not_cropped", "the gradient keeps dilate's extra trailing zeros",
        "UnDilate keeps every (d+1)-th element of an input of size n, which gives ceil(n / (d+1)) elements. "
        "Dilating out_grad back gives ceil(n / (d+1)) * (d+1) entries, which is more than n unless n is a multiple "
        "of d + 1: your gradient then has extra zeros at the end and the wrong shape. Crop it back to the "
        "input's shape.",
        _where(7, "UnDilate: undo the dilation"), undilate_gradient_not_cropped),
]


# Inputs on which these mistakes show, for `course check` (probes.py).
def _probes() -> list[Probe]:
    r = np.random.default_rng(303)
    x, y = r.standard_normal((3, 4, 5)), r.standard_normal((4, 5, 3))
    steps = lambda task, array, *s: Probe(task, request_call("ndarray_steps", array, list(s)), 0, 0)  # noqa: E731
    probes = [
        steps("ndarray_getitem", x, ["getitem", [[None, None, 2], [None, None, None], [1, None, 3]]]),
        steps("ndarray_getitem", x, ["getitem", [[None, None, None], 0, [4, 0, -3]]]),
        steps("ndarray_getitem", x, ["getitem", [[0, 1, None], [None, None, -1], 3]]),
        steps("ndarray_flip", view_of(y, y[1:3, 2:5, 1:]), ["flip", [0, 1]]),
        steps("ndarray_flip", view_of(y, y[2:3]), ["flip", [2]]),
        steps("ndarray_pad", r.standard_normal((3, 2)), ["pad", [[1, 2], [0, 3]]]),
        steps("ndarray_pad", r.standard_normal((2, 3, 2)), ["pad", [[2, 2], [1, 1], [0, 1]]]),
    ]
    for shape, axes, d in (((7,), (0,), 1), ((5, 8), (0, 1), 2)):
        g = r.standard_normal(tuple(-(-n // (d + 1)) if i in axes else n for i, n in enumerate(shape)))
        x = r.standard_normal(shape)
        probes.append(Probe("op_undilate", gradient_call("UnDilate", {"axes": axes, "dilation": d}, [x], g), 0, 0))
    return probes


# The other tasks whose code a task's probes run (probes.py): every NDArray is made with
# compact_strides, pad writes through slicing, UnDilate's gradient is Dilate.
NEEDS = {"ndarray_getitem": ("ndarray_compact_strides",),
         "ndarray_flip": ("ndarray_compact_strides",),
         "ndarray_pad": ("ndarray_compact_strides", "ndarray_getitem"),
         "op_undilate": ("ndarray_compact_strides", "ndarray_getitem", "op_dilate")}

PROBES = _probes()
