#!/usr/bin/env python
"""Pooling and the demo CNN's training step: course_lib against PyTorch, side by side in one run.

    .venv/bin/python benchmarks/bench_layers.py
    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_layers.py --threads 1   # the steadier figures

  pooling     max and average pooling, forward + backward, NHWC in course_lib and NCHW in
              torch, on the same numbers (outputs and input gradients checked before timing)
  CNN step    one training step of course_lib.train.small_cnn (forward, softmax loss, backward,
              Adam) on a batch of 8x8 digits, against the same network in torch with the same
              weights (the losses checked to agree before timing)

Prints the median time of --repeats runs after --warmup (minimum in brackets) and the ratio
course_lib / torch. --threads sets torch's threads; NumPy's come from OPENBLAS_NUM_THREADS.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir)))

from course_lib import nn, ops, optim  # noqa: E402
from course_lib.autograd import Tensor  # noqa: E402
from course_lib.data import load_digits  # noqa: E402
from course_lib.seeding import seed_everything  # noqa: E402
from course_lib.train import small_cnn  # noqa: E402


def timed(fn, repeats: int, warmup: int) -> tuple[float, float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def pooling(kind: str, shape, k: int, s: int, p: int, repeats: int, warmup: int) -> tuple:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)            # NHWC
    n, h, w, c = shape
    h_out, w_out = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    g = rng.standard_normal((n, h_out, w_out, c)).astype(np.float32)
    ours = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    theirs = F.max_pool2d if kind == "max" else F.avg_pool2d

    def course_lib_step():
        xt = Tensor(x)
        out = ours(xt, k, s, p)
        out.backward(Tensor(g, requires_grad=False))
        return out.numpy(), xt.grad.numpy()

    def torch_step():
        xt = torch.tensor(x.transpose(0, 3, 1, 2)).requires_grad_(True)
        out = theirs(xt, k, stride=s, padding=p)
        out.backward(torch.tensor(g.transpose(0, 3, 1, 2)))
        return out.detach().numpy().transpose(0, 2, 3, 1), xt.grad.numpy().transpose(0, 2, 3, 1)

    (o1, g1), (o2, g2) = course_lib_step(), torch_step()
    if not (np.allclose(o1, o2, atol=1e-5) and np.allclose(g1, g2, atol=1e-5)):
        raise SystemExit(f"{kind} pooling disagrees with torch: not timing a wrong result")
    return timed(course_lib_step, repeats, warmup), timed(torch_step, repeats, warmup)


class TorchCNN(torch.nn.Module):
    """small_cnn's architecture in torch: conv3x3 -> ReLU -> pool 2 (twice) -> flatten -> linear."""

    def __init__(self, ours, pool: str):
        super().__init__()
        convs = [m for m in ours.modules if isinstance(m, nn.Conv)]
        linear = next(m for m in ours.modules if isinstance(m, nn.Linear))
        self.convs = torch.nn.ModuleList()
        for conv in convs:
            layer = torch.nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, padding=conv.kernel_size // 2)
            layer.weight.data = torch.tensor(conv.weight.numpy().transpose(3, 2, 0, 1).copy())
            layer.bias.data = torch.tensor(conv.bias.numpy().copy())
            self.convs.append(layer)
        self.linear = torch.nn.Linear(linear.in_features, linear.out_features)
        self.linear.weight.data = torch.tensor(linear.weight.numpy().T.copy())
        self.linear.bias.data = torch.tensor(linear.bias.numpy().reshape(-1).copy())
        self.pool = F.max_pool2d if pool == "max" else F.avg_pool2d

    def forward(self, x):
        for conv in self.convs:
            x = self.pool(F.relu(conv(x)), 2)
        # course_lib's Flatten keeps NCHW order, as torch's does
        return self.linear(torch.flatten(x, 1))


def cnn_step(batch: int, repeats: int, warmup: int) -> tuple:
    seed_everything(0)
    images, labels = load_digits("train")
    x, y = images[:batch].astype(np.float32), labels[:batch]
    ours = small_cnn()
    theirs = TorchCNN(ours, "max")
    opt_ours = optim.Adam(ours.parameters(), lr=1e-3)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=1e-3)
    loss_fn = nn.SoftmaxLoss()

    def course_lib_step():
        opt_ours.reset_grad()
        loss = loss_fn(ours(Tensor(x, requires_grad=False)), Tensor(y, requires_grad=False))
        loss.backward()
        opt_ours.step()
        return float(loss.numpy())

    def torch_step():
        opt_theirs.zero_grad()
        loss = F.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y, dtype=torch.int64))
        loss.backward()
        opt_theirs.step()
        return float(loss.detach())

    first_ours, first_theirs = course_lib_step(), torch_step()
    if abs(first_ours - first_theirs) > 1e-4 * max(1.0, abs(first_theirs)):
        raise SystemExit(f"the CNNs disagree on the first loss ({first_ours} vs {first_theirs}): not timing")
    return timed(course_lib_step, repeats, warmup), timed(torch_step, repeats, warmup)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch threads {torch.get_num_threads()}; OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}")
    rows = []
    for kind, shape, k, s, p in (("max", (32, 32, 32, 64), 2, 2, 0), ("max", (32, 32, 32, 64), 3, 2, 1),
                                 ("avg", (32, 32, 32, 64), 2, 2, 0), ("avg", (32, 32, 32, 64), 3, 2, 1)):
        (ours, ours_min), (theirs, theirs_min) = pooling(kind, shape, k, s, p, args.repeats, args.warmup)
        rows.append((f"{kind} pool k{k} s{s} p{p} {shape}", ours, ours_min, theirs, theirs_min))
    (ours, ours_min), (theirs, theirs_min) = cnn_step(args.batch, args.repeats, args.warmup)
    rows.append((f"small_cnn training step, batch {args.batch}", ours, ours_min, theirs, theirs_min))
    print(f"{'what':44s} {'course_lib ms':>16s} {'torch ms':>16s} {'ratio':>6s}")
    for name, ours, ours_min, theirs, theirs_min in rows:
        print(f"{name:44s} {1e3 * ours:7.2f} [{1e3 * ours_min:6.2f}] {1e3 * theirs:7.2f} [{1e3 * theirs_min:6.2f}] "
              f"{ours / theirs:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
