"""Messages between grader and worker: length-prefixed frames of JSON plus raw array bytes.

    frame   = 8-byte big-endian length L, then L bytes:
              4-byte big-endian header length H, H bytes of UTF-8 JSON, then the blobs
    header  = {"message": <the message, arrays replaced by references>, "blobs": [n0, n1, ...]}

Values that may cross: None, bool, int, float (NaN and inf included), str, lists, tuples,
dicts with str keys, NumPy arrays of bool, integer or floating dtype (sent as raw bytes, no
pickle, checked against their declared dtype and shape), and two grader-only kinds:

    StridedView(buffer, shape, strides, offset)   an input to present as a non-compact view
    GraderFunction(token)                          a function the worker may call back

Everything else is refused with a message naming its type and where it was. The grader reads
frames with a deadline and a size limit (session.py); the worker trusts its grader.
"""
from __future__ import annotations

import json
import math
import os
import struct
from typing import NamedTuple

import numpy as np

ARRAY_KINDS = "biuf"
MAX_ARRAY_BYTES = 256 * 1024 ** 2
MAX_FRAME_BYTES = 512 * 1024 ** 2
MAX_DEPTH = 32
# JSON nesting of a frame's header: each value level is two JSON levels ({"__list__": [...]}),
# plus the header's own and an array reference's. Checked before parsing, so that a frame nested
# far deeper (100,000 levels) is refused in one pass instead of exhausting the JSON parser's stack.
MAX_JSON_DEPTH = 2 * MAX_DEPTH + 8
_LENGTH = struct.Struct(">Q")
_HEADER = struct.Struct(">I")


class ValueRefused(TypeError):
    """A value that cannot cross between grader and worker."""


class StridedView(NamedTuple):
    """An array to hand to the student as a view: element i is buffer[offset + i . strides]
    (strides in elements, possibly negative or zero)."""
    buffer: np.ndarray
    shape: tuple
    strides: tuple
    offset: int


class GraderFunction(NamedTuple):
    """A function that runs in the grader; the worker only sees an opaque token."""
    token: str


# ------------------------------------------------------------------------------------ encoding
def encode(value) -> bytes:
    """One frame holding ``value`` (a message: usually a dict)."""
    blobs: list[bytes] = []
    message = _encode(value, blobs, "the message", 0)
    header = json.dumps({"message": message, "blobs": [len(b) for b in blobs]}).encode()
    body = b"".join([_HEADER.pack(len(header)), header, *blobs])
    if len(body) > MAX_FRAME_BYTES:
        raise ValueRefused(f"a message of {len(body)} bytes is larger than the limit of {MAX_FRAME_BYTES}")
    return _LENGTH.pack(len(body)) + body


def _array(value: np.ndarray, blobs: list, where: str) -> dict:
    if value.dtype.kind not in ARRAY_KINDS:
        raise ValueRefused(f"{where}: arrays of dtype {value.dtype} cannot be graded; use numbers (float, int or bool)")
    if value.nbytes > MAX_ARRAY_BYTES:
        raise ValueRefused(f"{where}: an array of {value.nbytes} bytes is too large")
    data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("="), copy=False)
    blobs.append(data.tobytes())
    return {"__array__": len(blobs) - 1, "dtype": data.dtype.str, "shape": list(value.shape)}


def _encode(value, blobs: list, where: str, depth: int):
    if depth > MAX_DEPTH:
        raise ValueRefused(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if type(value) is np.ndarray:
        return _array(value, blobs, where)
    if isinstance(value, StridedView):
        return {"__view__": _array(value.buffer, blobs, where), "shape": [int(n) for n in value.shape],
                "strides": [int(s) for s in value.strides], "offset": int(value.offset)}
    if isinstance(value, GraderFunction):
        return {"__function__": str(value.token)}
    if type(value) in (list, tuple):
        return {"__list__": [_encode(v, blobs, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)],
                "tuple": type(value) is tuple}
    if type(value) is dict:
        if not all(type(k) is str for k in value):
            raise ValueRefused(f"{where}: dict keys must be strings")
        return {"__dict__": {k: _encode(v, blobs, f"{where}[{k!r}]", depth + 1) for k, v in value.items()}}
    raise ValueRefused(f"{where}: a {type(value).__name__} cannot be graded; return a NumPy array or a number")


# ------------------------------------------------------------------------------------ decoding
def decode(body: bytes, make_function=None):
    """The value of one frame's body (without its 8-byte length). ``make_function(token)``
    turns a GraderFunction reference into something callable (the worker's proxies); without
    it, references decode to GraderFunction tuples."""
    if len(body) < _HEADER.size:
        raise ValueRefused("a truncated message")
    (header_length,) = _HEADER.unpack_from(body)
    end = _HEADER.size + header_length
    text = body[_HEADER.size:end]
    if json_nested_deeper_than(text, MAX_JSON_DEPTH):
        raise ValueRefused(f"a message nested more than {MAX_JSON_DEPTH} levels deep (values may nest at most "
                           f"{MAX_DEPTH} levels)")
    try:
        header = json.loads(text.decode())
        lengths = [int(n) for n in header["blobs"]]
        message = header["message"]
    except RecursionError:  # never expected below MAX_JSON_DEPTH; refused all the same
        raise ValueRefused("a message nested too deeply to read") from None
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise ValueRefused("a message that is not valid JSON") from None
    if any(n < 0 for n in lengths) or end + sum(lengths) != len(body):
        raise ValueRefused("a message whose arrays do not add up to its length")
    blobs, at = [], end
    for n in lengths:
        blobs.append(body[at:at + n])
        at += n
    try:
        return _decode(message, blobs, make_function, 0)
    except ValueRefused:
        raise
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as err:
        # Valid JSON that is not a valid encoding: {"__view__": ..., "shape": "x"}, a missing key...
        raise ValueRefused(f"a malformed value ({type(err).__name__}: {str(err)[:200]})") from None


def json_nested_deeper_than(text: bytes, limit: int, chunk: int = 1 << 22) -> bool:
    """Whether [ and { nest more than ``limit`` levels deep in the JSON ``text`` (brackets inside
    strings do not count), found without parsing it: a parser recurses once per level.

    Vectorised, a chunk of bytes at a time (memory stays small whatever the frame's size): a
    quote counts unless an odd number of backslashes precedes it, a bracket counts when an even
    number of quotes precedes it. ``text`` is assumed to be JSON; anything else fails to parse."""
    if text.count(b"[") + text.count(b"{") <= limit:
        return False  # too few brackets (most frames: one quick count in C)
    depth = 0
    inside = 0      # 1 while inside a string at the chunk boundary
    pending = 0     # backslashes that ended the previous chunk
    for start in range(0, len(text), chunk):
        data = np.frombuffer(text, dtype=np.uint8, count=min(chunk, len(text) - start), offset=start)
        position = np.arange(data.size, dtype=np.int64)
        # the last byte at or before each position that is not a backslash (-1: none in this chunk)
        last_other = np.maximum.accumulate(np.where(data == ord("\\"), -1, position))
        quotes = np.flatnonzero(data == ord('"'))
        before = np.maximum(quotes - 1, 0)
        run = np.where(quotes > 0, before - last_other[before], 0)
        run += np.where((quotes == 0) | (last_other[before] == -1), pending, 0)
        real = np.zeros(data.size, dtype=np.int8)
        real[quotes[run % 2 == 0]] = 1
        in_string = (inside + np.cumsum(real, dtype=np.int64) - real) % 2 == 1
        step = np.zeros(data.size, dtype=np.int64)
        step[(data == ord("[")) | (data == ord("{"))] = 1
        step[(data == ord("]")) | (data == ord("}"))] = -1
        step[in_string] = 0
        levels = depth + np.cumsum(step)
        if int(levels.max()) > limit:
            return True
        depth, inside = int(levels[-1]), int(inside + real.sum()) % 2
        tail = data.size - 1 - int(last_other[-1])
        pending = tail + (pending if last_other[-1] == -1 else 0)
    return False


def _decode_array(ref, blobs) -> np.ndarray:
    try:
        index, dtype, shape = int(ref["__array__"]), np.dtype(ref["dtype"]), tuple(int(n) for n in ref["shape"])
    except (KeyError, TypeError, ValueError):
        raise ValueRefused("a malformed array reference") from None
    if dtype.kind not in ARRAY_KINDS or dtype.hasobject:
        raise ValueRefused(f"an array of dtype {dtype}")
    if not 0 <= index < len(blobs) or any(n < 0 for n in shape):
        raise ValueRefused("an array reference out of range")
    blob = blobs[index]
    if len(blob) != math.prod(shape) * dtype.itemsize:
        raise ValueRefused(f"an array declared {shape} {dtype} holds {len(blob)} bytes")
    return np.frombuffer(blob, dtype=dtype).reshape(shape).copy()


def _decode(data, blobs, make_function, depth):
    if depth > MAX_DEPTH:
        raise ValueRefused(f"a value nested more than {MAX_DEPTH} levels deep")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        raise ValueRefused("bare lists are not part of the protocol")
    if not isinstance(data, dict):
        raise ValueRefused(f"an unknown value of type {type(data).__name__}")
    if "__array__" in data:
        return _decode_array(data, blobs)
    if "__float__" in data:
        text = data["__float__"]
        if text not in ("nan", "inf", "-inf"):
            raise ValueRefused(f"a float written as {text!r}")
        return float(text)
    if "__list__" in data:
        if not isinstance(data["__list__"], list):
            raise ValueRefused("a malformed list")
        items = [_decode(v, blobs, make_function, depth + 1) for v in data["__list__"]]
        return tuple(items) if data.get("tuple") else items
    if "__dict__" in data:
        if not isinstance(data["__dict__"], dict):
            raise ValueRefused("a malformed dict")
        return {str(k): _decode(v, blobs, make_function, depth + 1) for k, v in data["__dict__"].items()}
    if "__view__" in data:
        buffer = _decode_array(data["__view__"], blobs)
        return StridedView(buffer, tuple(int(n) for n in data["shape"]), tuple(int(s) for s in data["strides"]),
                           int(data["offset"]))
    if "__function__" in data:
        token = str(data["__function__"])
        return make_function(token) if make_function else GraderFunction(token)
    raise ValueRefused(f"an unknown encoded value with keys {sorted(data)[:5]}")


# ------------------------------------------------------------------------------------ blocking I/O
def write_frame(fd: int, value) -> None:
    """Write one frame, blocking (the worker's side: it trusts its grader)."""
    write_bytes(fd, encode(value))


def write_bytes(fd: int, data: bytes) -> None:
    data = memoryview(data)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def read_frame(fd: int, make_function=None):
    """Read one frame, blocking; EOFError when the other side closed the pipe."""
    (length,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size))
    if length > MAX_FRAME_BYTES:
        raise ValueRefused(f"a message of {length} bytes is larger than the limit")
    return decode(_read_exactly(fd, length), make_function)


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, missing = [], n
    while missing:
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            raise EOFError("the pipe was closed")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)
