"""Reading a worker's value: the one validated way for hidden checks to take what came back.

Whatever a request returns was made by the submission (a notebook can even replace the worker's
scenarios), so its type and structure are the student's, not the grader's: a float may arrive as
a string, a list of records as a dict, an array with the wrong shape. A hidden check reads every
such value through one of these readers before it converts, indexes or compares it:

    as_array(value, what, shape=(None, 3), dtype_kind="f")   a NumPy array, as it came
    as_numbers(value, what, shape=(5,))                       numbers (a list or an array) as float64
    as_float(value, what) / as_int(value, what)               one number
    as_bool(value, what) / as_str(value, what)                True or False / a string
    as_number_or_array(value, what)                           what a comparison takes, as it came
    as_list(value, what, n=3)                                 a list (or tuple) of n items
    as_mapping(value, what, keys=("out", "grads"))            a dict holding those keys
    as_records(value, what, keys=("scale", "good"), n=4)      a list of such dicts

Each returns the value (checked, never altered except where it says so) or raises StudentError,
which fails that one check with a message saying what was expected and what came:

    pool_results['max']: expected a dict with the keys ['grad_norm', ...], got a list of 3 items

``shape`` is a tuple whose ``None`` entries match any length. Nesting depth needs no check here:
the protocol refuses values nested more than protocol.MAX_DEPTH levels before a reader sees them.
"""
from __future__ import annotations

import numpy as np

from .errors import StudentError

# Elements of one array a check reads; far above any result the suites ask for, well below
# what would make the grader's own arithmetic on it slow.
MAX_ARRAY_SIZE = 10 ** 7
MAX_ITEMS = 10 ** 6


def describe(value) -> str:
    """What a value is, in a few words, for a message: "a str ('0.5')", "a list of 3 items"."""
    if value is None:
        return "None"
    if type(value) is np.ndarray:
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if type(value) in (list, tuple):
        return f"a {type(value).__name__} of {len(value)} item{'' if len(value) == 1 else 's'}"
    if type(value) is dict:
        keys = sorted(value)
        shown = ", ".join(repr(k) for k in keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"a dict with the keys [{shown}]"
    if isinstance(value, (bool, int, float, str)):
        text = repr(value)
        return f"{_article(type(value).__name__)} ({text[:40]}{'...' if len(text) > 40 else ''})"
    return _article(type(value).__name__)


def _article(name: str) -> str:
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _refuse(what: str, expected: str, value) -> StudentError:
    return StudentError(f"{what}: expected {expected}, got {describe(value)}")


def _shape_text(shape) -> str:
    return "(" + ", ".join("any" if n is None else str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _check_shape(array: np.ndarray, what: str, shape) -> None:
    if shape is None:
        return
    shape = tuple(shape)
    if len(array.shape) != len(shape) or any(want is not None and got != want for got, want in zip(array.shape, shape)):
        raise StudentError(f"{what}: expected shape {_shape_text(shape)}, got shape {array.shape}")


def as_array(value, what: str, shape=None, dtype_kind: str | None = None, max_size: int = MAX_ARRAY_SIZE) -> np.ndarray:
    """``value`` itself if it is a NumPy array of ``shape`` whose dtype kind is one of
    ``dtype_kind`` (e.g. "f", or "iuf" for any numbers) and of at most ``max_size`` elements."""
    if type(value) is not np.ndarray:
        raise _refuse(what, "an array", value)
    if dtype_kind is not None and value.dtype.kind not in dtype_kind:
        kinds = {"b": "bool", "i": "integer", "u": "unsigned integer", "f": "floating"}
        raise StudentError(f"{what}: expected an array of {' or '.join(kinds.get(k, k) for k in dtype_kind)} "
                           f"numbers, got dtype {value.dtype}")
    if value.size > max_size:
        raise StudentError(f"{what}: expected at most {max_size} elements, got an array of shape {value.shape}")
    _check_shape(value, what, shape)
    return value


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _first_non_number(value, where: str, budget: list) -> str | None:
    """Where in a nested list of numbers (or numeric arrays) something else is, or None."""
    for i, item in enumerate(value):
        budget[0] -= 1
        if budget[0] < 0:
            return f"more than {MAX_ARRAY_SIZE} numbers"
        if _is_number(item):
            continue
        if type(item) in (list, tuple):
            found = _first_non_number(item, f"{where}[{i}]", budget)
            if found:
                return found
        elif type(item) is np.ndarray and item.dtype.kind in "iuf":
            budget[0] -= item.size
        else:
            return f"{describe(item)} at {where}[{i}]"
    return None


def as_number_or_array(value, what: str):
    """``value`` itself if it is an int, a float or a NumPy array (what a comparison can take)."""
    if _is_number(value):
        return value
    if type(value) is not np.ndarray:
        raise _refuse(what, "an array or a number", value)
    return as_array(value, what)


def as_numbers(value, what: str, shape=None, max_size: int = MAX_ARRAY_SIZE) -> np.ndarray:
    """A float64 array of the numbers ``value`` holds: a (nested) list or tuple of ints and
    floats, or a NumPy array of integers or floats; never strings, bools or ragged lists. A
    float64 array comes back as itself: the diagnoser knows which call gave it (session._remember)."""
    if type(value) is np.ndarray:
        return as_array(value, what, shape, "iuf", max_size).astype(np.float64, copy=False)
    if type(value) not in (list, tuple):
        raise _refuse(what, "a list or array of numbers", value)
    problem = _first_non_number(value, "", [max_size])
    if problem:
        raise StudentError(f"{what}: expected a list or array of numbers, got {problem}")
    try:
        array = np.array(value, dtype=np.float64)
    except ValueError:
        raise StudentError(f"{what}: expected a rectangular list of numbers, got rows of different lengths") from None
    _check_shape(array, what, shape)
    return array


def as_float(value, what: str) -> float:
    """``value`` as a float if it is a number (an int or a float, never a bool or a string)."""
    if not _is_number(value):
        raise _refuse(what, "a number", value)
    return float(value)


def as_int(value, what: str) -> int:
    """``value`` if it is an int (not a bool, not a float)."""
    if not (isinstance(value, int) and not isinstance(value, bool)):
        raise _refuse(what, "an int", value)
    return value


def as_bool(value, what: str) -> bool:
    """``value`` if it is a bool (True or False, not 0 or 1)."""
    if not isinstance(value, bool):
        raise _refuse(what, "True or False", value)
    return value


def as_str(value, what: str) -> str:
    """``value`` if it is a string."""
    if not isinstance(value, str):
        raise _refuse(what, "a string", value)
    return value


def as_list(value, what: str, n: int | None = None, max_items: int = MAX_ITEMS) -> list:
    """``value`` as a list if it is a list or tuple (of ``n`` items, when given)."""
    if type(value) not in (list, tuple):
        raise _refuse(what, "a list" if n is None else f"a list of {n} items", value)
    if n is not None and len(value) != n:
        raise StudentError(f"{what}: expected a list of {n} items, got {describe(value)}")
    if len(value) > max_items:
        raise StudentError(f"{what}: expected at most {max_items} items, got {len(value)}")
    return list(value)


def _keys_text(keys) -> str:
    return "[" + ", ".join(repr(k) for k in sorted(keys)) + "]"


def as_mapping(value, what: str, keys=(), exact: bool = False) -> dict:
    """``value`` if it is a dict holding every one of ``keys`` (and, with ``exact``, no other)."""
    keys = set(keys)
    wanted = f"a dict with the keys {_keys_text(keys)}" if keys else "a dict"
    if type(value) is not dict:
        raise _refuse(what, wanted, value)
    missing = keys - set(value)
    if missing:
        raise StudentError(f"{what}: expected {wanted}, but it lacks {_keys_text(missing)}")
    if exact and set(value) != keys:
        raise StudentError(f"{what}: expected exactly the keys {_keys_text(keys)}, got {_keys_text(value)}")
    return value


def as_records(value, what: str, keys, n: int | None = None) -> list[dict]:
    """``value`` as a list of dicts (``n`` of them, when given), each holding every one of ``keys``."""
    wanted = f"a list of records with the keys {_keys_text(keys)}"
    if type(value) not in (list, tuple):
        raise _refuse(what, wanted, value)
    records = as_list(value, what, n)
    for i, record in enumerate(records):
        if type(record) is not dict:
            raise StudentError(f"{what}: expected {wanted}, got {describe(record)} at [{i}]")
        as_mapping(record, f"{what}[{i}]", keys)
    return records
