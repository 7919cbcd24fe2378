# Generated from course_lib/demo.py for the release of 02_backward_ops by `python -m course_tools.build` - do not edit.
"""`make demo`: train the course's small CNN on the bundled digits for a few seconds."""
from __future__ import annotations

import argparse
import time

from tqdm.auto import tqdm

from . import optim
from .backend import default_device
from .data import DataLoader, load_digits
from .seeding import seed_everything
from .train import accuracy, small_cnn, train_epoch


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    seed_everything(args.seed)
    device = default_device()
    x_train, y_train = load_digits("train")
    x_test, y_test = load_digits("test")
    model = small_cnn(device=device)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    loader = DataLoader(x_train, y_train, batch_size=args.batch_size, shuffle=True, seed=args.seed, device=device)
    print(f"course_lib demo: small CNN on {len(y_train)} training / {len(y_test)} test digits (8x8), "
          f"device {device!r}, chance level 10%")
    start = time.perf_counter()
    with tqdm(total=args.epochs * len(loader), desc="training", unit="batch") as bar:
        for _ in range(args.epochs):
            train_epoch(model, loader, opt, progress=bar)
    seconds = time.perf_counter() - start
    acc = accuracy(model, x_test, y_test, device=device)
    print(f"test accuracy {acc:.1%} after {args.epochs} epochs in {seconds:.1f} s")
    return acc


if __name__ == "__main__":
    main()
