"""course_lib.profiler.measure: time and peak memory, the same quantity on every device."""
import numpy as np
import pytest

import course_lib
from course_lib import Tensor, nd, ops
from course_lib.profiler import measure

MB = 1 << 20


def test_measure_reports_time_and_a_peak_that_covers_the_arrays_made(device):
    with measure(device) as m:
        big = nd.ones((1000, 1000), dtype="float64", device=device)
        del big
    assert 8 * 1000 * 1000 <= m.peak_bytes < 9 * 1000 * 1000 and m.seconds > 0


def test_peak_counts_arrays_freed_in_the_block_but_never_two_that_did_not_coexist(device):
    """1 MiB made and freed, then 2 MiB made and freed: the peak is 2 MiB, not 3 (the pool
    keeps both blocks cached, so "bytes the pool holds at the end" would say 3)."""
    if not device.is_host:
        device.xp.get_default_memory_pool().free_all_blocks()
        held_before = device.xp.get_default_memory_pool().total_bytes()
    with measure(device) as m:
        a = nd.empty((MB // 4,), dtype="float32", device=device)
        del a
        b = nd.empty((2 * MB // 4,), dtype="float32", device=device)
        del b
    assert 2 * MB <= m.peak_bytes < 2 * MB + 64 * 1024
    if not device.is_host:
        assert device.xp.get_default_memory_pool().total_bytes() - held_before >= 3 * MB


def test_measures_nest(device):
    with measure(device) as outer:
        keep = nd.ones((1000,), dtype="float64", device=device)
        with measure(device) as inner:
            nd.ones((10000,), dtype="float64", device=device)
    assert inner.peak_bytes >= 80000 and outer.peak_bytes >= inner.peak_bytes + 8000
    del keep


def _conv_step(device):
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((8, 16, 16, 8)), device=device, dtype="float32")
    w = Tensor(rng.standard_normal((3, 3, 8, 16)), device=device, dtype="float32")
    g = Tensor(rng.standard_normal((8, 16, 16, 16)), device=device, dtype="float32", requires_grad=False)
    with measure(device) as m:
        ops.conv(x, w, padding=1).backward(g)
    return m.peak_bytes


@pytest.mark.cuda
def test_cuda_peak_of_a_conv_step_matches_the_cpu_peak():
    """The same conv forward+backward needs the same memory on the CUDA path as on NumPy:
    the two measurements (pool hook vs tracemalloc) agree up to rounding and Python objects."""
    from conftest import cuda_device

    cpu_peak, cuda_peak = _conv_step(course_lib.cpu()), _conv_step(cuda_device())
    assert cpu_peak > MB  # the im2col matrix alone is 8*16*16 x 72 float32s, 0.6 MB
    assert cuda_peak == pytest.approx(cpu_peak, rel=0.15), (cpu_peak, cuda_peak)
