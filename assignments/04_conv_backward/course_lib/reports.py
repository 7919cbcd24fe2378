# Generated from course_lib/reports.py for the release of 04_conv_backward by `python -m course_tools.build` - do not edit.
"""The tables and paired comparisons of experiment 07's reports.

    show_table(headers, rows)         a markdown table in the notebook
    mean_std(values)                  'mean ± sample standard deviation'
    paired(a, b)                      per-seed differences a - b, their mean, sd and 95% interval
    paired_text(a, b), reading(a, b)  the same comparison as a table cell and in words
    mib(n_bytes)                      bytes as MiB

a and b are per-seed values (lists of floats) measured on the same seeds, in the same order.
"""
from __future__ import annotations

import numpy as np


def show_table(headers, rows):
    """Display rows (lists of already formatted cells) as a markdown table (in a notebook)."""
    from IPython.display import Markdown, display  # only where a notebook shows the table

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    display(Markdown("\n".join(lines)))


def mean_std(values, fmt="{:.3f}"):
    """'mean ± sample standard deviation' of a list of numbers."""
    values = np.asarray(values, dtype=float)
    spread = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{fmt.format(values.mean())} ± {fmt.format(spread)}"


# The 97.5% quantile of Student's t distribution, by degrees of freedom (n seeds: n - 1).
T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23}


def paired(a, b):
    """Paired comparison of per-seed values a and b measured on the same seeds: the differences
    a - b, their mean, their sample standard deviation, and the 95% confidence interval of the
    mean difference, mean ± t * sd / sqrt(n) (t with n - 1 degrees of freedom)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(d)
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    half = T_975.get(n - 1, 1.96) * sd / np.sqrt(n) if n > 1 else float("nan")
    return {"differences": d, "mean": float(d.mean()), "sd": sd, "low": float(d.mean() - half),
            "high": float(d.mean() + half)}


def paired_text(a, b, scale=1.0, fmt="{:+.2f}"):
    """'mean [low, high] (sd s)' of the paired differences a - b, each multiplied by scale."""
    p = paired(np.asarray(a, float) * scale, np.asarray(b, float) * scale)
    if len(p["differences"]) < 2:
        return fmt.format(p["mean"])
    return f"{fmt.format(p['mean'])} [{fmt.format(p['low'])}, {fmt.format(p['high'])}] (sd {p['sd']:.2f})"


def reading(a, b, scale=1.0, unit="", first="the first"):
    """The paired comparison a - b (times scale) in words: the mean difference, its 95% interval,
    and whether the interval contains 0, which decides what a conclusion may claim (07's Part 0)."""
    p = paired(np.asarray(a, float) * scale, np.asarray(b, float) * scale)
    if len(p["differences"]) < 2:
        return f"{p['mean']:+.2f}{unit} from one seed: no interval, so no claim about a difference"
    if p["sd"] == 0:
        return f"{p['mean']:+.2f}{unit} on every seed: the runs give identical values"
    if p["low"] <= 0 <= p["high"]:
        verdict = "contains 0: these runs cannot tell the two apart (differences up to its ends remain possible)"
    else:
        verdict = f"does not contain 0: {first}'s is {'larger' if p['mean'] > 0 else 'smaller'}"
    return f"mean {p['mean']:+.2f}{unit}, 95% interval [{p['low']:+.2f}, {p['high']:+.2f}], which {verdict}"


def mib(n_bytes):
    """Bytes as mebibytes, for a table: 1398101 -> '1.33 MiB'."""
    return f"{n_bytes / 2**20:.2f} MiB"
