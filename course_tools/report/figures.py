"""The report's charts, drawn with matplotlib (Agg) and embedded in the page as base64 PNGs."""
from __future__ import annotations

import base64
import io
import math
import textwrap

from .stats import CheckStats, TaskStats


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def score_histograms(tasks: list[TaskStats]) -> str:
    """One small histogram per task: how many students got each score."""
    plt = _plt()
    shown = [t for t in tasks if t.scores]
    columns = min(4, max(1, len(shown)))
    rows = max(1, math.ceil(len(shown) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.4 * rows), squeeze=False)
    for ax, t in zip(axes.flat, shown):
        bins = min(10, max(2, int(t.points * 2) + 1))
        ax.hist(t.scores, bins=bins, range=(0, t.points), color="#4878a8" if not t.manual else "#a86448",
                edgecolor="white")
        ax.set_title(("\u270e " if t.manual else "") + t.task, fontsize=9)
        ax.set_xlabel(f"score (of {t.points:g})", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.yaxis.get_major_locator().set_params(integer=True)
    for ax in list(axes.flat)[len(shown):]:
        ax.axis("off")
    fig.suptitle("Scores per task (\u270e: graded by hand)", fontsize=10)
    fig.tight_layout()
    return _png(fig)


def check_pass_rates(checks: list[CheckStats]) -> str:
    """Pass rate of each hidden check (its cases together), worst first."""
    plt = _plt()
    rows = sorted((c.pass_rate, c.task, c.check) for c in checks)
    height = max(2.0, 0.28 * len(rows) + 0.8)
    fig, ax = plt.subplots(figsize=(9, height))
    labels = [f"{task}: " + textwrap.shorten(check, 70, placeholder="...") for _, task, check in rows]
    rates = [100 * rate for rate, _, _ in rows]
    colors = ["#c0504d" if r < 50 else "#f0ad4e" if r < 90 else "#5cb85c" for r in rates]
    ax.barh(range(len(rows)), rates, color=colors)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("submissions passing (%)", fontsize=8)
    ax.set_title("Pass rate per hidden check", fontsize=10)
    return _png(fig)


def score_vs_time(points: list[tuple], due) -> str:
    """Final score against submission time; the due date as a line. points: (time, score, max)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 3))
    if points:
        times, scores, maxima = zip(*points)
        ax.scatter(times, [100 * s / m if m else 0 for s, m in zip(scores, maxima)], color="#4878a8", s=18)
    if due is not None:
        ax.axvline(due, color="#c0504d", linestyle="--", linewidth=1, label="due")
        ax.legend(fontsize=8)
    ax.set_ylim(-5, 105)
    ax.set_ylabel("final score (%)", fontsize=8)
    ax.set_xlabel("submitted (UTC)", fontsize=8)
    ax.tick_params(labelsize=7)
    fig.autofmt_xdate()
    ax.set_title("Score against submission time", fontsize=10)
    return _png(fig)
