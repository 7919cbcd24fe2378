# Generated from course_lib/parallel.py for the release of 05_pooling_backward by `python -m course_tools.build` - do not edit.
"""Independent pieces of host work shared out over the processor's cores.

A convolution in cache-sized pieces (``Conv.evaluate``) is many small matrix multiplies with
copies between them. Left to NumPy, only the multiplies use a second core (the BLAS library
splits each one), and its idle BLAS threads spin between them, competing with the copies for
the cores: with two BLAS threads the benchmark's conv was slower than with one. Here each core
takes whole pieces instead, with a single-threaded BLAS: the multiplies, copies and sums of
NumPy release the GIL, so the pieces run side by side.

How many cores: as many as the BLAS library was told to use (``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS``; by default every core), at most as many as this process may run on. So
``OPENBLAS_NUM_THREADS=1`` (the single-threaded benchmark, the grading sandbox) runs the pieces
one after the other, as before. The BLAS library is found and limited with ``threadpoolctl``;
without it everything runs on one core (so in the grading sandbox, which shows a submission
only the packages its notebook imports, and gives it one BLAS thread anyway).

The work must be safe to run on several threads at once: course_lib's NDArray operations keep
no state between calls, so the students' ``compute`` methods are.

Three ways to use it: ``run_in_blocks`` (any work, one block of numbers per core: the kernel
gradient's channel sums), ``batch_over_cores`` (output rows computed a few images at a time:
the convolution's image pieces) and ``slices_over_cores`` (an operation that treats each image
of a batch on its own, on the whole block of each core: pooling).
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Callable, List, Optional, TypeVar

try:
    from threadpoolctl import ThreadpoolController
except ImportError:  # an install without it computes on one core
    ThreadpoolController = None

from .nd import NDArray, axis_slice

T = TypeVar("T")

_blas_controller = None
_blas_controller_lock = threading.Lock()


def _blas():
    """threadpoolctl's handle on the BLAS libraries loaded in this process (NumPy's), or None."""
    global _blas_controller
    if ThreadpoolController is None:
        return None
    with _blas_controller_lock:
        if _blas_controller is None:
            _blas_controller = ThreadpoolController().select(user_api="blas")
        return _blas_controller


def host_workers() -> int:
    """How many cores pieces of host work may share: the BLAS library's thread count, at most
    the number of CPUs this process may run on; 1 without threadpoolctl or a BLAS it knows."""
    blas = _blas()
    if blas is None or not blas.lib_controllers:
        return 1
    threads = max(lib.num_threads for lib in blas.lib_controllers)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(threads, cpus))


def split_range(whole: range, parts: int) -> List[range]:
    """``whole`` cut into ``parts`` consecutive ranges (fewer if it is shorter) whose lengths
    differ by at most one: split_range(range(10), 3) -> [range(0, 4), range(4, 7), range(7, 10)]."""
    parts = max(1, min(parts, len(whole)))
    size, extra = divmod(len(whole), parts)
    ranges, start = [], whole.start
    for i in range(parts):
        stop = start + size + (1 if i < extra else 0)
        ranges.append(range(start, stop))
        start = stop
    return ranges


def pieces(block: range, most: int) -> List[range]:
    """``block`` in as few consecutive pieces of at most ``most`` as can be, of even length."""
    return split_range(block, -(-len(block) // max(1, most)))


def run_in_blocks(count: int, work: Callable[[range], T], workers: Optional[int] = None) -> List[T]:
    """Split the numbers ``range(count)`` (images, channels...) into consecutive blocks of
    nearly equal length, one per core, and return ``[work(block) for block in blocks]``, the
    blocks in order.

    workers: how many blocks (and threads); default ``host_workers()``, never more than
    ``count``. With one, ``work(range(count))`` runs on the calling thread and nothing changes.
    With more, the calling thread takes the first block and each other block gets a thread of
    its own; the BLAS library uses one thread meanwhile and gets its thread count back after.
    If blocks raise, the exception of the first of them is raised here, once every block has
    finished.
    """
    workers = host_workers() if workers is None else workers
    blocks = split_range(range(count), int(workers))
    if len(blocks) == 1:
        return [work(blocks[0])]
    results: List[Optional[T]] = [None] * len(blocks)
    errors: dict = {}

    def run(i: int) -> None:
        try:
            results[i] = work(blocks[i])
        except BaseException as error:  # re-raised on the calling thread
            errors[i] = error

    blas = _blas()
    with blas.limit(limits=1) if blas is not None else contextlib.nullcontext():
        threads = []
        for i in range(1, len(blocks)):
            thread = threading.Thread(target=run, args=(i,), name=f"course_lib-piece-{i}", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no thread to be had (a process limit): this one does it
                thread = None
            threads.append((i, thread))
        try:
            run(0)
            for i, thread in threads:
                if thread is None:
                    run(i)
        finally:
            for _, thread in threads:
                if thread is not None:
                    thread.join()
    if errors:
        raise errors[min(errors)]
    return results


def batch_over_cores(n: int, piece: Callable[[range], NDArray], most: Optional[int] = None) -> NDArray:
    """An (n, ...) array whose rows ``images`` are ``piece(images)``, for consecutive blocks
    of the batch ``range(n)``, one block per core (``run_in_blocks``), each block cut into
    pieces of at most ``most`` images (default: the whole block). The output takes the shape
    and dtype of the first piece done, on the host.

    piece: images (a range) -> the output rows of those images, an NDArray of len(images) rows.
    """
    if n == 0:
        return piece(range(0))
    made = []  # the output, made from the first piece done, whichever core did it
    made_lock = threading.Lock()

    def block(images: range) -> None:
        for part in pieces(images, most or len(images)):
            result = piece(part)
            with made_lock:
                if not made:
                    made.append(NDArray.make((n,) + result.shape[1:], device=result.device, dtype=result.dtype))
            expected = (len(part),) + made[0].shape[1:]
            if result.shape != expected:  # never broadcast a wrong piece into the output
                raise ValueError(f"the piece of images {part.start}..{part.stop - 1} of a batch of {n} came "
                                 f"out with shape {result.shape}, expected {expected}")
            made[0]._view()[part.start:part.stop] = result._view()

    run_in_blocks(n, block)
    return made[0]


def slices_over_cores(compute: Callable[..., NDArray], *arrays: NDArray, min_bytes: int) -> NDArray:
    """``compute(*arrays)`` for an operation that treats each image (axis 0 of every array)
    on its own, with the batch shared out over the cores when the first array is on the host
    and holds at least ``min_bytes`` (below that a thread costs more than it saves)."""
    first = arrays[0]
    if (not first.device.is_host or first.size * first.handle.itemsize < min_bytes
            or any(x.ndim == 0 or x.shape[0] != first.shape[0] for x in arrays)):
        return compute(*arrays)  # (batches that differ: compute's own error names the shapes)
    return batch_over_cores(first.shape[0], lambda images: compute(
        *[axis_slice(x, 0, images.start, images.stop) for x in arrays]))
