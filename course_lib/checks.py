"""Visible checks for notebooks: assertions whose failure message tells a student what to fix.

Values are compared on the host, as NumPy arrays (``course_lib.host.to_numpy``), whatever
device computed them. Gradients are checked by ``course_lib.gradcheck.gradient_check``.

    assert_close(got, expected, "PowerScalar(3).compute")
        -> AssertionError: PowerScalar(3).compute: wrong values: max |got - expected| = 2.5 at
           index (1, 0): got 5.0, expected 7.5 (shape (2, 3), rtol 1e-06, atol 1e-08)
"""
from __future__ import annotations

import ast
import contextlib
import linecache
import re
import sys
import traceback
from typing import Callable

import numpy as np

from .host import to_numpy


def assert_close(got, expected, what: str, rtol: float = 1e-6, atol: float = 1e-8,
                 check_dtype: bool = False) -> None:
    """Raise AssertionError naming ``what`` unless got and expected agree in shape and value."""
    if got is None:
        raise AssertionError(f"{what}: got None. Did the function forget to `return` its result?")
    got_np, expected_np = to_numpy(got), to_numpy(expected)
    if got_np.shape != expected_np.shape:
        raise AssertionError(f"{what}: wrong shape: got {got_np.shape}, expected {expected_np.shape}")
    if check_dtype and got_np.dtype != expected_np.dtype:
        raise AssertionError(f"{what}: wrong dtype: got {got_np.dtype}, expected {expected_np.dtype}")
    if got_np.dtype == object or expected_np.dtype == object:
        raise AssertionError(f"{what}: got an array of Python objects, expected numbers")
    g, e = got_np.astype(np.float64), expected_np.astype(np.float64)
    if not np.isfinite(g).all() and np.isfinite(e).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(g))[0])
        raise AssertionError(f"{what}: non-finite value {g[bad]} at index {bad}; expected {e[bad]}")
    ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        err = np.where(ok, 0.0, np.abs(g - e))
        worst = np.unravel_index(int(np.nanargmax(err)), err.shape) if err.ndim else ()
        worst = tuple(int(i) for i in worst)
        raise AssertionError(
            f"{what}: wrong values: max |got - expected| = {err[worst]:.4g} at index {worst}: "
            f"got {g[worst]:.6g}, expected {e[worst]:.6g} "
            f"({int((~ok).sum())} of {ok.size} elements differ; shape {g.shape}, rtol {rtol:g}, atol {atol:g})")


def assert_raises(exception: type, fn: Callable, *args, match: str | None = None, what: str = "") -> None:
    """Raise AssertionError unless ``fn(*args)`` raises ``exception`` (whose message matches ``match``)."""
    label = what or getattr(fn, "__name__", "the call")
    try:
        fn(*args)
    except exception as err:
        if match is not None and not re.search(match, str(err)):
            raise AssertionError(f"{label}: raised {type(err).__name__} as expected, but its message "
                                 f"{str(err)!r} does not mention {match!r}") from None
        return
    except Exception as err:  # the wrong kind of error
        raise AssertionError(f"{label}: expected {exception.__name__}, got {type(err).__name__}: {err}") from None
    raise AssertionError(f"{label}: expected {exception.__name__}, but nothing was raised")


def passed(what: str) -> None:
    """Print a one-line success message (visible checks end with it)."""
    print(f"\N{CHECK MARK} {what}")


@contextlib.contextmanager
def demonstration(what: str):
    """Run a locked demonstration (a figure, a demo, an optional comparison) so that a mistake in
    the student's code is reported, not raised: Run All then goes on to the cells below, and the
    check of the task that is wrong says what to fix. Every exception is caught (a stub's
    NotImplementedError, a ValueError from a wrong shape, a failed assertion), only for the body.

        with demonstration("second derivatives through your ops"):
            ...code that calls the student's ops...
    """
    try:
        yield
    except Exception as err:  # the student's code may raise anything; this cell must not stop Run All
        if isinstance(err, NotImplementedError):
            reason = "a task it uses is not written yet (NotImplementedError)"
        else:
            reason = f"{type(err).__name__}: {err}"
        print(f"\N{BALLOT X} {what} could not run: {reason}\n"
              "  It uses your code from the tasks above; the check of the task that fails says what to fix. "
              "The cells below still run.")


@contextlib.contextmanager
def lent(owner, name: str, stand_in):
    """Put ``stand_in`` in the place of ``owner.name`` (a class or a module; a dict such as a
    notebook's ``globals()`` by key) for the duration of a ``with`` block, then put back what was
    there. A visible check uses it so that it fails only because of its own task: the pieces of
    *other* tasks of the same notebook that the checked code calls are replaced by reference
    values (naive loops shipped with the notebook, or precomputed recipes) while it runs.

        with lent(FirstMaxMask, "compute", loop_mask_compute):
            ...check MaxPool2dBackward.compute, which calls the mask...
    """
    missing = object()
    if isinstance(owner, dict):
        saved = owner.get(name, missing)
        owner[name] = stand_in
    else:
        saved = owner.__dict__.get(name, missing) if isinstance(owner, type) else getattr(owner, name, missing)
        setattr(owner, name, stand_in)
    try:
        yield stand_in
    finally:
        if isinstance(owner, dict):
            if saved is missing:
                owner.pop(name, None)
            else:
                owner[name] = saved
        elif saved is missing:
            delattr(owner, name)
        else:
            setattr(owner, name, saved)


# Jupyter's "Run All" stops at the first cell that raises, so a failing check silently keeps every
# later check from running. Every notebook imports this module in its setup cell; in a Jupyter
# kernel the error display then ends with this note. The error itself is unchanged (nbgrader's
# Validate and `course check` still see the failure): only its traceback gains the lines.
RUN_ALL_NOTE = ("Run All stops at the first cell that raises, so the cells below this one, and their checks, "
                "have not run. To run them anyway, select the next cell and choose "
                "Run > Run Selected Cell and All Below.")


def _short(value, limit: int = 60) -> str:
    """A case's value for a message: its repr, an array by its shape and dtype, cut to ``limit``."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None and len(shape) > 0:
        return f"<{type(value).__name__} of shape {tuple(shape)}, {dtype}>"
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails still names its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def case_being_checked(tb, namespace: dict) -> str | None:
    """The case a check was at when ``tb`` was raised: the variables of the ``for`` loops of the
    notebook's cell that ran (a module-level frame whose globals are ``namespace``) around the line
    that raised, outer loop first, e.g. "axis=np.int64(1), ndim=2, expected=(1,)"; None outside
    such a loop. Loops inside functions (the student's own, a helper's) are not the check's cases.

    Every visible check that iterates over cases does it with a plain ``for`` loop, so this names
    the case for all of them: an exception from the student's code (a TypeError deep inside their
    function) then says which input it was checking, not only what went wrong."""
    found: dict[str, str] = {}
    for frame, lineno in traceback.walk_tb(tb):
        if frame.f_globals is not namespace or frame.f_code.co_name != "<module>":
            continue
        source = "".join(linecache.getlines(frame.f_code.co_filename))
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):  # a cell with IPython syntax (magics) is not Python
            continue
        loops = [node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.AsyncFor))
                 and node.body and node.body[0].lineno <= lineno <= (node.end_lineno or node.lineno)]
        for loop in sorted(loops, key=lambda node: node.lineno):
            for name in ast.walk(loop.target):
                if isinstance(name, ast.Name) and name.id in frame.f_locals and name.id not in found:
                    found[name.id] = _short(frame.f_locals[name.id])
    return ", ".join(f"{name}={value}" for name, value in found.items()) or None


def _traceback_with_note(shell, etype, value, tb, tb_offset=None):
    """IPython's custom-exception handler: shows the usual traceback, then RUN_ALL_NOTE, as the
    cell's error output (IPython has already marked the cell as failed before calling it). An error
    raised inside a check's loop over cases, other than the check's own AssertionError or a stub's
    NotImplementedError, also names the case, in the traceback and in the error's one-line message
    (which `course check` reports)."""
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # for %debug, as IPython does
    lines = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    shown, case = value, None
    if not isinstance(value, (AssertionError, NotImplementedError)):
        try:
            case = case_being_checked(tb, shell.user_ns)
        except Exception:  # naming the case is a courtesy: it never hides the error itself
            case = None
    if case:
        shown = f"{value} (while checking the case {case})"
        lines = [*lines, "", f"While checking the case {case}"]
    shell._showtraceback(etype, shown, [*lines, "", f"\N{WARNING SIGN} {RUN_ALL_NOTE}"])


def install_run_all_note(shell=None) -> bool:
    """Make ``shell`` (default: the running IPython, if any) end every error it shows with
    RUN_ALL_NOTE; True if there was a shell. Outside IPython (scripts, the grading worker) nothing
    changes, and IPython is never imported here."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    shell.set_custom_exc((Exception,), _traceback_with_note)
    return True


install_run_all_note()
