# Generated from course_lib/student.py for the release of 04_conv_backward by `python -m course_tools.build` - do not edit.
"""How a notebook's code plugs into course_lib.

A notebook cell defines a function and installs it in place of the library's version:

    from course_lib import ops
    from course_lib.student import implements

    @implements(ops.PowerScalar, "compute")
    def power_scalar_compute(self, a):
        return a ** self.scalar

From then on every op, layer, test and experiment in that kernel runs the student's code.
The target may be a class (the function becomes a method) or a module (the function replaces
a module-level function, e.g. ``implements(course_lib.autograd, "find_topo_sort")``).
"""
from __future__ import annotations

import types
from typing import Callable


def implements(target, name: str) -> Callable:
    """Decorator: install the function as ``target.<name>``; returns it unchanged."""
    if not isinstance(target, (type, types.ModuleType)):
        raise TypeError(f"implements() needs a class or a module, got {type(target).__name__}")
    if not hasattr(target, name):
        raise AttributeError(f"{getattr(target, '__name__', target)!s} has no attribute {name!r} to replace")

    def install(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"implements({target.__name__}, {name!r}) must decorate a function")
        setattr(target, name, fn)
        return fn

    return install
