"""What the queue says, for `course status` (the service's state) and `course report` (attempts)."""
from __future__ import annotations

import datetime
import json
import math

from .queue import DONE, GRADING, GRADING_ERROR, QUEUED, utcnow


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def queue_summary(rows: list[dict], now: datetime.datetime | None = None) -> dict:
    """Counts per state and today's (UTC) submit-to-feedback waits of the rows of queue.Queue.rows."""
    now = now or utcnow()
    today = datetime.datetime.combine(now.date(), datetime.time())
    waits = [(r["finished_at"] - r["submitted_at"]).total_seconds() for r in rows
             if r["state"] == DONE and r["finished_at"] and r["finished_at"] >= today]
    count = {state: sum(r["state"] == state for r in rows) for state in (QUEUED, GRADING, DONE, GRADING_ERROR)}
    # A queued row that carries an error failed a grading and waits for its retry (worker.py).
    retry_rows = [r for r in rows if r["state"] == QUEUED and r["error"]]
    return {"waiting": count[QUEUED], "grading": count[GRADING], "done": count[DONE], "errors": count[GRADING_ERROR],
            "retrying": len(retry_rows), "retry_rows": retry_rows,
            "median_wait": _percentile(waits, 0.5) if waits else None,
            "p95_wait": _percentile(waits, 0.95) if waits else None,
            "error_rows": [r for r in rows if r["state"] == GRADING_ERROR]}


def attempts(rows: list[dict]) -> dict:
    """Graded attempts per student, and per task how many attempts its students needed to reach
    full marks (among those who did) and how many never did.

        {"per_student": {student: attempts}, "per_task": {task: {"to_full": [n, ...], "never": k}}}
    """
    per_student: dict[str, list[dict]] = {}
    for row in rows:
        if row["state"] == DONE and row["scores"] and row["outcome"] in ("graded", "reused"):
            per_student.setdefault(row["student"], []).append(json.loads(row["scores"]))
    per_task: dict[str, dict] = {}
    for tries in per_student.values():
        for task in tries[0]:
            entry = per_task.setdefault(task, {"to_full": [], "never": 0})
            first_full = next((n for n, scores in enumerate(tries, 1)
                               if task in scores and scores[task][0] >= scores[task][1]), None)
            if first_full is None:
                entry["never"] += 1
            else:
                entry["to_full"].append(first_full)
    return {"per_student": {s: len(t) for s, t in sorted(per_student.items())}, "per_task": per_task}


def held_up_longest(per_task: dict) -> str | None:
    """The task that held students up longest: the most attempts to full marks on average, those
    who never got there counted as one attempt more than the most anyone needed."""
    def cost(entry):
        most = max(entry["to_full"], default=0) + 1
        values = entry["to_full"] + [most] * entry["never"]
        return sum(values) / len(values) if values else 0
    return max(per_task, key=lambda task: cost(per_task[task]), default=None)
