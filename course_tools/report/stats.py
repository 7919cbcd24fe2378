"""The numbers of `course report`: per task, per hidden check, per student, and the signals an
instructor acts on (a miscalibrated check, written and autograded scores that disagree, manual
grading left to do, late work, grading errors, the mistakes the class made most)."""
from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from .data import ClassData

MISCALIBRATED_SHARE = 0.9   # a check failed by at least this share of the graded submissions...
MISCALIBRATED_MIN = 5       # ...of at least this many is flagged
DISAGREEMENT = 0.5          # |written fraction - autograded fraction| at least this is listed


@dataclass
class CheckStats:
    """One hidden check (all its parameter cases together) over the class."""
    task: str
    check: str                                            # the check's description (one line of feedback)
    runs: int = 0                                         # submissions it ran on
    failures: int = 0                                     # submissions failing at least one of its cases
    cases: Counter = field(default_factory=Counter)       # failing case -> submissions
    messages: Counter = field(default_factory=Counter)    # normalised failure message -> count
    examples: dict = field(default_factory=dict)          # normalised -> one real message
    blank_passes: bool | None = None                      # the blank release's outcome

    @property
    def label(self) -> str:
        return self.check

    @property
    def pass_rate(self) -> float:
        return (self.runs - self.failures) / self.runs if self.runs else 0.0

    def top_message(self) -> tuple[str, int] | None:
        if not self.messages:
            return None
        normalised, count = self.messages.most_common(1)[0]
        return self.examples[normalised], count


@dataclass
class TaskStats:
    task: str
    points: float
    manual: bool
    scores: list[float]
    pending: int                 # submissions whose answer still waits for a grader
    diagnoses: Counter = field(default_factory=Counter)   # misconception title -> students
    graded_by: Counter = field(default_factory=Counter)   # grader -> answers graded

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.scores) if self.scores else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.scores) if self.scores else None

    def share(self, which: str) -> float:
        if not self.scores:
            return 0.0
        count = {"full": sum(s >= self.points - 1e-9 for s in self.scores),
                 "zero": sum(s <= 1e-9 for s in self.scores)}
        count["partial"] = len(self.scores) - count["full"] - count["zero"]
        return count[which] / len(self.scores)


_NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def normalise(message: str) -> str:
    """A failure message with its numbers blanked: messages that differ only in values group together."""
    return _NUMBER.sub("#", message)[:300]


def check_stats(data: ClassData) -> list[CheckStats]:
    """Per hidden check, over the submissions that are not the blank release handed back."""
    table: dict[tuple, CheckStats] = {}
    for record in data.students:
        if record.result is None or record.blank:
            continue
        for task, graded in record.result.get("tasks", {}).items():
            by_check: dict[str, list] = {}
            for check in graded["checks"]:
                by_check.setdefault(check["check"], []).append(check)
            for description, cases in by_check.items():
                stats = table.setdefault((task, description), CheckStats(task, description))
                stats.runs += 1
                failed = [c for c in cases if not c["passed"]]
                if failed:
                    stats.failures += 1
                    stats.cases.update(c.get("case") or "" for c in failed)
                    normalised = normalise(failed[0]["message"])
                    stats.messages[normalised] += 1
                    stats.examples.setdefault(normalised, failed[0]["message"])
    if data.blank:
        for task, graded in data.blank.get("tasks", {}).items():
            for check in graded["checks"]:
                stats = table.get((task, check["check"]))
                if stats is not None:
                    stats.blank_passes = bool(check["passed"]) and (stats.blank_passes is not False)
    return list(table.values())


def task_stats(data: ClassData) -> list[TaskStats]:
    out = []
    for task, points in {**data.points, **data.manual_points}.items():
        manual = task in data.manual_points
        graded = [s for s in data.graded if task in s.tasks]
        scores = [s.tasks[task].score for s in graded if not s.tasks[task].pending]
        stats = TaskStats(task, points, manual, scores, sum(s.tasks[task].pending for s in graded))
        for s in data.graded:
            diagnosis = ((s.result or {}).get("tasks", {}).get(task) or {}).get("diagnosis")
            if diagnosis:
                stats.diagnoses[diagnosis["title"]] += 1
            grader = data.graded_by.get((s.student, task))
            if grader:
                stats.graded_by[grader] += 1
        out.append(stats)
    return out


def miscalibrated(checks: list[CheckStats]) -> list[tuple[CheckStats, str]]:
    """Checks that (almost) everyone fails, or that the blank release passes."""
    flagged = []
    for c in checks:
        if c.blank_passes:
            flagged.append((c, "the blank release passes it: it checks nothing the student writes"))
        elif c.runs >= MISCALIBRATED_MIN and c.failures / c.runs >= MISCALIBRATED_SHARE:
            flagged.append((c, f"{c.failures} of {c.runs} submissions fail it: is it too strict, or is the "
                               f"notebook unclear?"))
    return flagged


def disagreements(data: ClassData) -> list[tuple[str, float, float]]:
    """Students whose hand-graded and autograded fractions differ by DISAGREEMENT or more."""
    out = []
    for s in data.graded:
        written, auto = s.fraction(manual=True), s.fraction(manual=False)
        if written is not None and auto is not None and abs(written - auto) >= DISAGREEMENT:
            out.append((s.student, written, auto))
    return out
