# Generated from course_lib/figures.py for the release of 04_conv_backward by `python -m course_tools.build` - do not edit.
"""Small figures the notebooks share: arrays drawn as labelled grids, and curves on log axes."""
from __future__ import annotations

import numpy as np

from .host import to_numpy


def show_grids(*arrays, titles=None, fmt="{:g}", cmap="Blues", size=2.2, highlight=None):
    """Draw 2-D arrays side by side as grids with their values written in the cells.

    arrays: NDArray, Tensor or NumPy arrays of shape (H, W). highlight: a list (one per array)
    of boolean masks or None, outlining the cells that are True. Returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt  # here, not at import: matplotlib takes a second to load

    grids = [np.atleast_2d(to_numpy(a)) for a in arrays]
    titles = titles or [""] * len(grids)
    fig, axes = plt.subplots(1, len(grids), figsize=(size * max(1, len(grids)) * 1.2, size * 1.1), squeeze=False)
    for index, (ax, grid, title) in enumerate(zip(axes[0], grids, titles)):
        finite = grid[np.isfinite(grid)] if grid.size else grid
        vmax = float(np.abs(finite).max()) if finite.size else 1.0
        ax.imshow(np.where(np.isfinite(grid), grid, 0), cmap=cmap, vmin=-vmax * 0.15, vmax=vmax or 1.0)
        for (r, c), value in np.ndenumerate(grid):
            dark = np.isfinite(value) and abs(value) > 0.6 * vmax  # white text stays readable there
            ax.text(c, r, fmt.format(value), ha="center", va="center", fontsize=9,
                    color="white" if dark else "black")
        mask = highlight[index] if highlight else None
        if mask is not None:
            for (r, c), on in np.ndenumerate(np.asarray(mask)):
                if on:
                    ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, lw=2.5, color="crimson"))
        ax.set_xticks(range(grid.shape[1]))
        ax.set_yticks(range(grid.shape[0]))
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def loglog_curves(xs, curves: dict, xlabel: str, ylabel: str, title: str = "", mark_min: bool = True):
    """Plot several y(x) curves on log-log axes; mark each curve's minimum. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, ys in curves.items():
        ys = np.asarray(ys, dtype=float)
        ax.loglog(xs, ys, marker="o", ms=3, label=label)
        if mark_min:
            best = int(np.nanargmin(ys))
            ax.annotate(f"best h = {xs[best]:.0e}", (xs[best], ys[best]), textcoords="offset points",
                        xytext=(5, -15), fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig
