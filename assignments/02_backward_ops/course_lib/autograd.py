# Generated from course_lib/autograd.py for the release of 02_backward_ops by `python -m course_tools.build` - do not edit.
"""The computational graph and reverse-mode automatic differentiation.

    Value        a node of the graph: the ``op`` that made it, its ``inputs``, its cached data
    Tensor       a Value whose data is one NDArray
    TensorTuple  a Value whose data is a tuple of NDArrays (outputs of split, inputs of stack)
    Op           forward ``compute(*NDArray) -> NDArray`` and backward
                 ``gradient(out_grad: Tensor, node: Tensor) -> Tensor | tuple[Tensor, ...]``

``gradient`` is written with ops on Tensors, never on raw arrays, so the gradient is itself a
graph and can be differentiated again (``backward(create_graph=True)``).
"""
from __future__ import annotations

import contextlib
from typing import Iterable, Optional

from . import nd
from .backend import Device, default_device
from .nd import NDArray

# Lazy mode builds the graph without computing; data is computed when first asked for.
LAZY_MODE = False
_GRAD_ENABLED = [True]


@contextlib.contextmanager
def no_grad():
    """Inside this block ops record no graph: results are constants with requires_grad=False."""
    _GRAD_ENABLED.append(False)
    try:
        yield
    finally:
        _GRAD_ENABLED.pop()


def is_grad_enabled() -> bool:
    return _GRAD_ENABLED[-1]


class Op:
    """An operator of the graph. Subclasses define ``compute`` and ``gradient``."""

    def __call__(self, *args):
        raise NotImplementedError

    def compute(self, *args: NDArray):
        """The forward computation on NDArrays."""
        raise NotImplementedError

    def gradient(self, out_grad: "Value", node: "Value"):
        """Partial adjoints of each input, given the adjoint ``out_grad`` of ``node``."""
        raise NotImplementedError

    def evaluate(self, *args: NDArray):
        """How the graph runs ``compute``: once, on the whole inputs. An op may override this
        to split large inputs into pieces and call ``compute`` on each (Conv does)."""
        return self.compute(*args)

    def gradient_as_tuple(self, out_grad: "Value", node: "Value") -> tuple:
        grads = self.gradient(out_grad, node)
        if isinstance(grads, tuple):
            return grads
        if isinstance(grads, list):
            return tuple(grads)
        return (grads,)

    def __repr__(self) -> str:
        return type(self).__name__


class TensorOp(Op):
    """An op whose output is a Tensor."""

    def __call__(self, *args):
        return Tensor.make_from_op(self, args)


class TensorTupleOp(Op):
    """An op whose output is a TensorTuple."""

    def __call__(self, *args):
        return TensorTuple.make_from_op(self, args)


class Value:
    """A node of the computational graph."""

    op: Optional[Op]
    inputs: list["Value"]
    cached_data: object
    requires_grad: bool

    def realize_cached_data(self):
        """The node's data, computing it (and its inputs') if lazy mode left it empty."""
        if self.cached_data is None:
            self.cached_data = self.op.evaluate(*[x.realize_cached_data() for x in self.inputs])
        return self.cached_data

    def is_leaf(self) -> bool:
        return self.op is None

    def _init(self, op, inputs, *, cached_data=None, requires_grad=None):
        if requires_grad is None:
            requires_grad = any(x.requires_grad for x in inputs)
        self.op = op
        self.inputs = list(inputs)
        self.cached_data = cached_data
        self.requires_grad = requires_grad

    @classmethod
    def make_const(cls, data, *, requires_grad=False):
        value = cls.__new__(cls)
        value._init(None, [], cached_data=data, requires_grad=requires_grad)
        return value

    @classmethod
    def make_from_op(cls, op: Op, inputs: list["Value"]):
        inputs = [_as_value(x) for x in inputs]
        _check_devices(op, inputs)
        value = cls.__new__(cls)
        value._init(op, inputs)
        if not is_grad_enabled():
            # Compute now and forget the graph: nothing will differentiate through it.
            return cls.make_const(value.realize_cached_data())
        if not LAZY_MODE:
            if not value.requires_grad:
                return value.detach()
            value.realize_cached_data()
        return value


def _as_value(x):
    if isinstance(x, Value):
        return x
    raise TypeError(f"op inputs must be Tensors, got {type(x).__name__}")


def _check_devices(op: Op, inputs: list[Value]):
    devices = {x.device for x in inputs if isinstance(x, Tensor)}
    if len(devices) > 1:
        shapes = ", ".join(f"{x.shape} on {x.device!r}" for x in inputs if isinstance(x, Tensor))
        raise ValueError(f"{op!r}: inputs are on different devices ({shapes}); move them with .to(device)")


class TensorTuple(Value):
    """A tuple of Tensors that is one node of the graph."""

    def __len__(self) -> int:
        return len(self.realize_cached_data())

    def __getitem__(self, index: int) -> "Tensor":
        return tuple_get_item(self, index)

    def tuple(self) -> tuple["Tensor", ...]:
        return tuple(self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"TensorTuple({self.tuple()!r})"

    def __add__(self, other: "TensorTuple") -> "TensorTuple":
        if not isinstance(other, TensorTuple) or len(self) != len(other):
            raise ValueError("can only add TensorTuples of the same length")
        return make_tuple(*[self[i] + other[i] for i in range(len(self))])

    def detach(self) -> "TensorTuple":
        return TensorTuple.make_const(self.realize_cached_data())

    @property
    def device(self):
        return self.realize_cached_data()[0].device


class Tensor(Value):
    """An n-dimensional array that remembers how it was computed."""

    grad: Optional["Tensor"]

    def __init__(self, array, *, device: Optional[Device] = None, dtype=None, requires_grad: bool = True):
        """array: a Tensor, NDArray, numpy/cupy array, list or scalar (copied unless it is an
        NDArray already on ``device`` with ``dtype``)."""
        if isinstance(array, Tensor):
            array = array.realize_cached_data()
        if isinstance(array, NDArray) and (device is None or device == array.device) \
                and (dtype is None or nd._check_dtype(dtype) == array.dtype):
            data = array
        else:
            if isinstance(array, NDArray) and device is None:
                device = array.device
            data = nd.array(array, dtype=dtype, device=device or default_device())
        if requires_grad and data.dtype not in nd.SUPPORTED_FLOAT_DTYPES:
            requires_grad = False  # integer labels and masks have no gradient
        self._init(None, [], cached_data=data, requires_grad=requires_grad)

    def _init(self, op, inputs, *, cached_data=None, requires_grad=None):
        super()._init(op, inputs, cached_data=cached_data, requires_grad=requires_grad)
        self.grad = None

    # ------------------------------------------------------------------ data
    @property
    def data(self) -> "Tensor":
        """The same data, cut from the graph."""
        return self.detach()

    @data.setter
    def data(self, value: "Tensor"):
        value = value.realize_cached_data() if isinstance(value, Tensor) else value
        current = self.realize_cached_data()
        if value.dtype != current.dtype or value.shape != current.shape:
            raise ValueError(f"assigning data of shape {value.shape} and dtype {value.dtype} to a tensor "
                             f"of shape {current.shape} and dtype {current.dtype}")
        self.cached_data = value

    def detach(self) -> "Tensor":
        return Tensor.make_const(self.realize_cached_data())

    @property
    def shape(self) -> tuple[int, ...]:
        return self.realize_cached_data().shape

    @property
    def dtype(self) -> str:
        return self.realize_cached_data().dtype

    @property
    def device(self) -> Device:
        return self.realize_cached_data().device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numpy(self):
        """A NumPy copy of the data."""
        return self.realize_cached_data().numpy()

    def item(self) -> float:
        if self.realize_cached_data().size != 1:
            raise ValueError(f"item() needs a tensor with one element, got shape {self.shape}")
        return self.numpy().reshape(-1)[0].item()

    def to(self, device: Device) -> "Tensor":
        return Tensor(self.realize_cached_data().to(device), requires_grad=self.requires_grad)

    def astype(self, dtype) -> "Tensor":
        return Tensor(self.realize_cached_data().astype(dtype), requires_grad=self.requires_grad)

    def __repr__(self) -> str:
        return f"course_lib.Tensor({self.numpy()!r}, device={self.device!r})"

    def __str__(self) -> str:
        return str(self.numpy())

    # ------------------------------------------------------------------ backward
    def backward(self, out_grad: Optional["Tensor"] = None, *, create_graph: bool = False):
        """Fill ``.grad`` of every node this tensor depends on.

        out_grad: the adjoint of this tensor; defaults to 1 for a scalar (one element).
        create_graph: keep the gradients as a graph so they can be differentiated again.
        """
        if out_grad is None:
            if self.realize_cached_data().size != 1:
                raise ValueError(f"backward() on a non-scalar tensor of shape {self.shape} needs out_grad "
                                 f"(a tensor of the same shape)")
            out_grad = Tensor(nd.ones(self.shape, dtype=self.dtype, device=self.device), requires_grad=False)
        elif out_grad.shape != self.shape:
            raise ValueError(f"backward(): out_grad has shape {out_grad.shape}, the tensor has {self.shape}")
        if create_graph:
            compute_gradient_of_variables(self, out_grad)
        else:
            with no_grad():
                compute_gradient_of_variables(self, out_grad)

    # ------------------------------------------------------------------ operators
    def __add__(self, other):
        from . import ops
        return ops.add(self, other) if isinstance(other, Tensor) else ops.add_scalar(self, other)

    __radd__ = __add__

    def __mul__(self, other):
        from . import ops
        return ops.multiply(self, other) if isinstance(other, Tensor) else ops.mul_scalar(self, other)

    __rmul__ = __mul__

    def __pow__(self, other):
        from . import ops
        return ops.power(self, other) if isinstance(other, Tensor) else ops.power_scalar(self, other)

    def __sub__(self, other):
        from . import ops
        if isinstance(other, Tensor):
            return ops.add(self, ops.negate(other))
        return ops.add_scalar(self, -other)

    def __rsub__(self, other):
        from . import ops
        return ops.add_scalar(ops.negate(self), other)

    def __truediv__(self, other):
        from . import ops
        return ops.divide(self, other) if isinstance(other, Tensor) else ops.divide_scalar(self, other)

    def __rtruediv__(self, other):
        from . import ops
        return ops.mul_scalar(ops.power_scalar(self, -1), other)

    def __matmul__(self, other):
        from . import ops
        return ops.matmul(self, other)

    def __neg__(self):
        from . import ops
        return ops.negate(self)

    def sum(self, axes=None):
        from . import ops
        return ops.summation(self, axes)

    def broadcast_to(self, shape):
        from . import ops
        return ops.broadcast_to(self, shape)

    def reshape(self, shape):
        from . import ops
        return ops.reshape(self, shape)

    def transpose(self, axes=None):
        from . import ops
        return ops.transpose(self, axes)

    __hash__ = object.__hash__


# ---------------------------------------------------------------------- tuples
class MakeTensorTuple(TensorTupleOp):
    def compute(self, *args):
        return tuple(args)

    def gradient(self, out_grad, node):
        return tuple(out_grad[i] for i in range(len(out_grad)))


class TupleGetItem(TensorOp):
    def __init__(self, index: int):
        self.index = index

    def compute(self, a):
        return a[self.index]

    def gradient(self, out_grad, node):
        tensors = node.inputs[0]
        parts = [out_grad if i == self.index else
                 Tensor(nd.zeros(x.shape, dtype=x.dtype, device=x.device), requires_grad=False)
                 for i, x in enumerate(tensors.realize_cached_data())]
        return make_tuple(*parts)


def make_tuple(*tensors: Tensor) -> TensorTuple:
    return MakeTensorTuple()(*tensors)


def tuple_get_item(value: TensorTuple, index: int) -> Tensor:
    return TupleGetItem(index)(value)


# ---------------------------------------------------------------------- reverse mode
def find_topo_sort(node_list: Iterable[Value]) -> list[Value]:
    """Every node the given nodes depend on, each once, each after all of its inputs."""
    raise NotImplementedError("topo_sort: not implemented yet; you write it in assignment 02_backward_ops")


def compute_gradient_of_variables(output_tensor: Value, out_grad: Value) -> None:
    """Reverse-mode differentiation: set ``node.grad`` for every node ``output_tensor`` depends on.

    A node used several times receives the sum of the partial adjoints from each use.
    """
    raise NotImplementedError("reverse_mode: not implemented yet; you write it in assignment 02_backward_ops")


def sum_node_list(node_list: list[Value]) -> Value:
    """The sum of partial adjoints, added in order (``a + b + c``)."""
    total = node_list[0]
    for node in node_list[1:]:
        total = total + node
    return total
