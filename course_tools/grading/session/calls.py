"""The calls a hidden suite's checks make, one wrapper per worker scenario (see
sandbox/worker/scenarios.py): each sends its request and reads the answer through expect.py,
so a value of the wrong kind fails the check with a message naming what was expected.

A mixin of StudentSession (session.py), on top of its ``request`` (requests.py).
"""
from __future__ import annotations

import numpy as np

from .. import views
from ..diagnosis.diagnosis import Call
from ..sandbox.worker.protocol import StridedView
from . import expect
from .errors import StudentError


class ScenarioCalls:
    def forward(self, op, attrs, *arrays, substitutes=None):
        value = self.request("forward", op, attrs, list(arrays), views=True, what=f"{op}.compute",
                             options={"substitutes": substitutes} if substitutes else None)
        return _array(value, f"{op}.compute")

    def gradient(self, op, attrs, arrays, out_grad, output=None, reevaluate=None, substitutes=None):
        """One array per input; with ``reevaluate``, {"grads", "reevaluated"} (see worker/scenarios.py)."""
        options = {k: v for k, v in (("output", output), ("reevaluate", reevaluate),
                                      ("substitutes", substitutes)) if v is not None}
        value = self.request("gradient", op, attrs, list(arrays), out_grad, views=True, what=f"{op}.gradient",
                             options=options)
        if reevaluate is None:
            return _arrays(value, len(arrays), f"{op}.gradient")
        if not isinstance(value, dict) or set(value) != {"grads", "reevaluated"}:
            raise StudentError(f"{op}.gradient: the result cannot be graded")
        return {key: _arrays(value[key], len(arrays), f"{op}.gradient") for key in value}

    def call(self, target, *arrays, as_tensors=False, out_grad=None, reevaluate=None, substitutes=None, **kwargs):
        """The function's result; with ``out_grad``, {"out", "grads"} after backward; with
        ``reevaluate`` (new input values), {"out", "again"}: its graph evaluated at those values."""
        what = target.split(":")[-1]
        options = {k: v for k, v in (("reevaluate", reevaluate), ("substitutes", substitutes)) if v is not None}
        value = self.request("call", target, list(arrays), kwargs, as_tensors, out_grad, views=True, what=what,
                             options=options)
        if reevaluate is not None:
            if not isinstance(value, dict) or set(value) != {"out", "again"}:
                raise StudentError(f"{what}: the result cannot be graded")
            return {"out": _array(value["out"], what), "again": _array(value["again"], what)}
        if out_grad is not None:
            if not isinstance(value, dict) or set(value) != {"out", "grads"}:
                raise StudentError(f"{what}: the result cannot be graded")
            grads = expect.as_list(value["grads"], f"{what} backward (one gradient per input)", len(arrays))
            return {"out": _array(value["out"], what),
                    "grads": [None if g is None else _array(g, f"{what} backward") for g in grads]}
        return value

    def ndarray_steps(self, array, steps):
        """The view the steps end with, read by the grader from its buffer: values, shape, strides,
        offset and whether it is compact (row-major, offset 0, covering its whole buffer)."""
        what = "the NDArray the steps gave"
        view = self._read_view(self.request("ndarray_steps", array, steps, what="the NDArray methods"), what)
        self._remember({"values": view["values"]}, Call("ndarray_steps", (array, steps), {}))
        return view

    def forward_view(self, op, attrs, *arrays):
        """``op.compute``'s result as ndarray_steps reads a view: values, shape, strides, offset, compact."""
        what = f"{op}.compute"
        return self._read_view(self.request("forward_view", op, attrs, list(arrays), what=what), what)

    def _read_view(self, got, what: str) -> dict:
        got = expect.as_mapping(got, what, ("buffer", "shape", "strides", "offset"))
        buffer = expect.as_array(got["buffer"], f"{what}: its buffer")
        shape, strides = (tuple(expect.as_int(n, f"{what}: its {key}")
                                for n in expect.as_list(got[key], f"{what}: its {key}")) for key in ("shape", "strides"))
        if len(strides) != len(shape):
            raise StudentError(f"{what}: {len(strides)} strides for a shape of {len(shape)} axes")
        view = StridedView(buffer.reshape(-1), shape, strides, expect.as_int(got["offset"], f"{what}: its offset"))
        try:
            values = views.values_of(view)
        except ValueError as err:
            raise StudentError(f"{what} cannot be read: {err}") from None
        compact = (view.strides == views.compact_strides(view.shape) and view.offset == 0
                   and buffer.size == int(np.prod(view.shape)))
        return {"values": values, "shape": list(view.shape), "strides": list(view.strides), "offset": view.offset,
                "compact": bool(compact)}

    def variable(self, name):
        return self.request("variable", name, what=f"the variable {name}")

    def loss_scaler_run(self, settings, steps):
        """The records of the loss_scaler_run scenario (one per step), and the same run as columns
        {"scale", "good", "skipped", "finite"}: arrays the diagnoser can trace back to this call
        (the records' numbers are plain floats, which it cannot)."""
        what = "LossScaler: the steps' records"
        records = expect.as_records(self.request("loss_scaler_run", settings, steps, what="LossScaler"), what,
                                    ("finite", "grads", "scale", "good", "skipped"), n=len(steps))
        for i, (record, step) in enumerate(zip(records, steps)):
            expect.as_list(record["grads"], f"{what}[{i}]['grads'] (one per parameter)", len(step))
        read = {"scale": expect.as_float, "good": expect.as_int, "skipped": expect.as_int, "finite": expect.as_bool}
        columns = {key: np.array([float(reader(r[key], f"{what}[{i}][{key!r}]")) for i, r in enumerate(records)])
                   for key, reader in read.items()}
        self._remember(columns, Call("loss_scaler_run", (settings, steps), {}))
        return records, columns

    def check_flags(self, check, implementations, args=None, seconds_each: int = 20):
        """The student's check run on each implementation (course_lib names, or grader functions
        from ``grader_function``): one outcome string each, in the same order."""
        n = len(implementations)
        value = self.request("check_flags", check, list(implementations), args, seconds_each,
                             timeout=max(self.call_timeout, seconds_each * n + 5), what=check.split(":")[-1])
        if not isinstance(value, list) or len(value) != n or not all(isinstance(v, str) for v in value):
            raise StudentError(f"{check}: the outcomes cannot be graded")
        return value


def _array(value, what: str) -> np.ndarray:
    """A result that must be one array (expect.py: the readers every check uses)."""
    return expect.as_array(value, what)


def _arrays(value, n: int, what: str) -> list:
    """The gradients of an op with ``n`` inputs: a list of ``n`` arrays."""
    grads = expect.as_list(value, f"{what} (one gradient per input)", n)
    return [_array(v, f"{what}, gradient {i}") for i, v in enumerate(grads)]
