# Generated from course_lib/__init__.py for the release of 02_backward_ops by `python -m course_tools.build` - do not edit.
"""course_lib: the autograd library students build in this course, on NumPy (CPU) or CuPy (GPU).

Names follow CMU's needle library: ``Tensor``, ``ops.<op>``, ``NDArray.make/compact/...``,
``cpu()``, ``cuda()``.
"""
from .backend import Device, all_devices, cpu, cuda, default_device
from . import nd
from .nd import NDArray
from .autograd import (Op, Tensor, TensorOp, TensorTuple, TensorTupleOp, Value,
                       compute_gradient_of_variables, find_topo_sort, no_grad)
from . import ops, init, nn, optim
from .gradcheck import gradient_check, rel_error
from .seeding import seed_everything

__all__ = ["Device", "all_devices", "cpu", "cuda", "default_device", "nd", "NDArray", "Op", "Tensor",
           "TensorOp", "TensorTuple", "TensorTupleOp", "Value", "compute_gradient_of_variables",
           "find_topo_sort", "no_grad", "ops", "init", "nn", "optim", "gradient_check", "rel_error",
           "seed_everything"]
