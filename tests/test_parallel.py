"""course_lib.parallel (pieces of host work on several cores, one BLAS thread each) and the
convolution's pieces run on two cores: same values as on one, torch's values."""
import importlib
import os
import threading

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from course_lib import nd, ops, parallel
from course_lib.backend import cpu
from conftest import assert_close, from_torch_nchw, kernel_from_torch, kernel_to_torch, tensor, to_torch_nchw


# The modules, not the functions of the same names that course_lib.ops exports.
conv_module = importlib.import_module("course_lib.ops.conv")
pooling = importlib.import_module("course_lib.ops.pooling")


def blas_threads():
    return max(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas")


@pytest.mark.parametrize("length, parts", [(10, 3), (7, 7), (3, 5), (32, 2), (1, 4), (100, 6)])
def test_split_range_is_consecutive_and_even(length, parts):
    ranges = parallel.split_range(range(length), parts)
    # NumPy's array_split makes the same promise: lengths differ by at most one, longest first.
    expected = [len(piece) for piece in np.array_split(np.arange(length), min(parts, length))]
    assert [len(r) for r in ranges] == expected
    assert [i for r in ranges for i in r] == list(range(length))


def test_split_range_of_an_offset_range():
    assert parallel.split_range(range(5, 12), 2) == [range(5, 9), range(9, 12)]


def test_blocks_run_on_their_own_threads_with_one_blas_thread():
    seen = []

    def work(block):
        seen.append((block, threading.get_ident(), blas_threads()))
        return sum(block)

    with threadpool_limits(limits=2, user_api="blas"):
        results = parallel.run_in_blocks(10, work, workers=2)
        assert blas_threads() == 2, "the BLAS thread count was not given back"
    assert results == [sum(range(0, 5)), sum(range(5, 10))]
    assert sorted((b for b, _, _ in seen), key=lambda b: b.start) == [range(0, 5), range(5, 10)]
    assert len({ident for _, ident, _ in seen}) == 2
    assert all(threads == 1 for _, _, threads in seen), seen
    assert threading.get_ident() in {ident for _, ident, _ in seen}, "the calling thread should take a block"


def test_one_worker_runs_everything_on_the_calling_thread_untouched():
    seen = []
    with threadpool_limits(limits=2, user_api="blas"):
        results = parallel.run_in_blocks(6, lambda block: seen.append((block, threading.get_ident(),
                                                                        blas_threads())) or len(block), workers=1)
    assert results == [6]
    assert seen == [(range(6), threading.get_ident(), 2)]


def test_the_first_failing_block_is_raised_after_all_finished():
    finished = []

    def work(block):
        if block.start == 0:
            raise KeyError("first")
        if block.start == 4:
            raise ValueError("second")
        finished.append(block)

    with threadpool_limits(limits=3, user_api="blas"):
        with pytest.raises(KeyError, match="first"):
            parallel.run_in_blocks(6, work, workers=3)
        assert blas_threads() == 3
    assert finished == [range(2, 4)]


def test_workers_follow_the_blas_thread_count():
    with threadpool_limits(limits=1, user_api="blas"):
        assert parallel.host_workers() == 1
    with threadpool_limits(limits=64, user_api="blas"):
        workers = parallel.host_workers()
    assert 1 <= workers <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("case", [
    (6, 9, 9, 3, 4, 3, 3, 1, 1, 1),     # images in pieces; the kernel gradient in channel pieces
    (5, 11, 10, 4, 3, 3, 3, 2, 1, 1),   # stride 2 (the kernel gradient leaves out unused rows)
    (4, 9, 8, 3, 2, 2, 3, 3, 0, 1),     # stride 3 without padding (unused rows cropped)
], ids=["stride1", "stride2", "stride3"])
@pytest.mark.parametrize("min_rows", [1, 10_000], ids=["images", "channels"])
def test_conv_pieces_on_two_cores_match_one_core_and_torch(rng, monkeypatch, case, min_rows):
    monkeypatch.setattr(conv_module, "COLUMN_CACHE_BYTES", 1)  # every conv in pieces...
    monkeypatch.setattr(conv_module, "MIN_PIECE_ROWS", min_rows)  # ...of images, or of channels
    threads = set()
    compute = conv_module.Conv.compute
    monkeypatch.setattr(conv_module.Conv, "compute",
                        lambda self, a, b: threads.add(threading.get_ident()) or compute(self, a, b))
    n, h, w_, ci, co, kh, kw, s, p, d = case
    x = rng.standard_normal((n, h, w_, ci)).astype(np.float32)
    w = rng.standard_normal((kh, kw, ci, co)).astype(np.float32)
    v = rng.standard_normal((n, (h + 2 * p - kh) // s + 1, (w_ + 2 * p - kw) // s + 1, co)).astype(np.float32)

    def forward_backward(workers):
        monkeypatch.setattr(parallel, "host_workers", lambda: workers)
        threads.clear()
        x_c, w_c = tensor(x, cpu(), "float32"), tensor(w, cpu(), "float32")
        out = ops.conv(x_c, w_c, stride=s, padding=p, dilation=d)
        out.backward(tensor(v, cpu(), "float32", requires_grad=False))
        return out.numpy(), x_c.grad.numpy(), w_c.grad.numpy(), len(threads)

    out1, gx1, gw1, threads1 = forward_backward(1)
    out2, gx2, gw2, threads2 = forward_backward(2)
    # One core: all on the calling thread; two: another thread too (a new one for each conv).
    assert threads1 == 1 and threads2 >= 2, (threads1, threads2)
    if min_rows == 1:  # images are written where they belong: the same bits as on one core
        for name, two, one in (("output", out2, out1), ("input gradient", gx2, gx1), ("kernel gradient", gw2, gw1)):
            np.testing.assert_array_equal(two, one, err_msg=name)
    else:  # each core adds up its channels, then the two sums are added: another order
        for name, two, one in (("output", out2, out1), ("input gradient", gx2, gx1), ("kernel gradient", gw2, gw1)):
            assert_close(two, one, rtol=1e-5, atol=1e-5, what=f"{name} on two cores vs one")

    xt, wt, vt = to_torch_nchw(x), kernel_to_torch(w), to_torch_nchw(v)
    assert_close(out2, from_torch_nchw(torch.nn.functional.conv2d(xt, wt, stride=s, padding=p, dilation=d)),
                 rtol=1e-4, atol=1e-4, what="output on two cores")
    grad_x = torch.nn.grad.conv2d_input(xt.shape, wt, vt, stride=s, padding=p, dilation=d)
    grad_w = torch.nn.grad.conv2d_weight(xt, wt.shape, vt, stride=s, padding=p, dilation=d)
    assert_close(gx2, from_torch_nchw(grad_x), rtol=1e-4, atol=1e-4, what="input gradient on two cores")
    assert_close(gw2, kernel_from_torch(grad_w), rtol=1e-4, atol=1e-4, what="kernel gradient on two cores")


def test_a_failing_piece_reaches_the_caller(rng, monkeypatch):
    monkeypatch.setattr(conv_module, "COLUMN_CACHE_BYTES", 1)
    monkeypatch.setattr(conv_module, "MIN_PIECE_ROWS", 1)  # one image a piece
    monkeypatch.setattr(parallel, "host_workers", lambda: 2)
    compute = conv_module.Conv.compute

    def failing(self, a, b):
        if a.shape[0] == 1 and threading.current_thread() is not threading.main_thread():
            raise NotImplementedError("conv_im2col_forward: not written yet")
        return compute(self, a, b)

    monkeypatch.setattr(conv_module.Conv, "compute", failing)
    with pytest.raises(NotImplementedError, match="conv_im2col_forward"):
        ops.conv(tensor(rng.standard_normal((4, 6, 6, 2)), cpu(), "float32"),
                 tensor(rng.standard_normal((3, 3, 2, 3)), cpu(), "float32"), padding=1).numpy()


@pytest.mark.parametrize("kind, k, s, p", [("max", 2, 2, 0), ("max", 3, 2, 1), ("avg", 3, 2, 1), ("avg", 2, 1, 1)])
def test_pooling_on_two_cores_matches_one_core_and_torch(rng, monkeypatch, kind, k, s, p):
    monkeypatch.setattr(pooling, "PARALLEL_MIN_BYTES", 0)  # every batch shared out
    x = rng.standard_normal((5, 9, 8, 3)).astype(np.float32)
    pool = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    out_shape = (5, (9 + 2 * p - k) // s + 1, (8 + 2 * p - k) // s + 1, 3)
    v = rng.standard_normal(out_shape).astype(np.float32)

    def forward_backward(workers):
        monkeypatch.setattr(parallel, "host_workers", lambda: workers)
        x_c = tensor(x, cpu(), "float32")
        out = pool(x_c, k, s, p)
        out.backward(tensor(v, cpu(), "float32", requires_grad=False))
        return out.numpy(), x_c.grad.numpy()

    (out1, grad1), (out2, grad2) = forward_backward(1), forward_backward(2)
    np.testing.assert_array_equal(out2, out1)
    np.testing.assert_array_equal(grad2, grad1)

    xt = to_torch_nchw(x, requires_grad=True)
    torch_pool = (torch.nn.functional.max_pool2d(xt, k, s, p) if kind == "max"
                  else torch.nn.functional.avg_pool2d(xt, k, s, p, count_include_pad=True))
    torch_pool.backward(to_torch_nchw(v))
    assert_close(out2, from_torch_nchw(torch_pool), rtol=1e-5, atol=1e-6, what=f"{kind} pool on two cores")
    assert_close(grad2, from_torch_nchw(xt.grad), rtol=1e-5, atol=1e-6, what=f"{kind} pool gradient on two cores")


def test_a_piece_of_the_wrong_shape_is_an_error_not_a_broadcast():
    def piece(images):  # one row whatever the images: would broadcast into every row
        return nd.array(np.ones((1, 3)))

    with pytest.raises(ValueError, match=r"images 0\.\.1 of a batch of 4 came out with shape \(1, 3\), expected \(2, 3\)"):
        parallel.batch_over_cores(4, piece, most=2)
