"""`course mutants [IDS]`: how many small changes to the reference solution the hidden suites notice.

    course mutants                          # every mutant of every assignment (a benchmark: hours)
    course mutants 01_forward_ops 03_ndarray --workers 2
    course mutants 05_pooling_backward --tasks maxpool_backward --together
    course mutants --sample 2               # the fixed sample tests/test_mutants.py grades
    course mutants --check-equivalent [ID ...] [--examples N]   # test the listed equivalences (equivalence.py)

Prints per task: mutants, killed, survived, equivalent (listed in autograder/equivalent_mutants.toml),
the fraction killed of the non-equivalent ones; writes ``survivors.md`` (each survivor's diff)
and ``summary.json`` into --out. Exit status 1 on a grading error, on a listed equivalent
mutant that a suite now kills (the list is wrong), or on a task below --require.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from course_lib import tasks as course_tasks

from course_student.words import plural

from .mutants import mutants_of, sample
from .run import STORE, equivalent_ids, grade_mutants, tally


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course mutants", description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="assignment ids (default: all)")
    parser.add_argument("--tasks", nargs="*", default=None, help="only these task ids")
    parser.add_argument("--sample", type=int, default=0, metavar="N", help="N mutants per task, fixed by id")
    parser.add_argument("--workers", type=int, default=2, help="gradings at a time (default 2)")
    parser.add_argument("--together", action="store_true",
                        help="one mutant of each task per notebook; kills confirmed alone (run.py says when)")
    parser.add_argument("--require", type=float, default=0.0, metavar="FRACTION",
                        help="fail when a task kills less than this fraction of its non-equivalent mutants")
    parser.add_argument("--check-equivalent", nargs="*", default=None, metavar="ID",
                        help="run each listed equivalent mutant (or these) against its reference on its task's "
                             "battery of inputs; exit 1 if one is refuted, stale or untested")
    parser.add_argument("--examples", type=int, default=100, metavar="N",
                        help="with --check-equivalent: generated inputs per entry, after the fixed ones (default 100)")
    parser.add_argument("--out", type=Path, default=STORE / "report", help="where survivors.md and summary.json go")
    return parser


def check_equivalent(ids: list[str], examples: int) -> int:
    """Print each entry's verdict and the count; 1 when any entry is refuted, stale or untested."""
    from .equivalence import check_entries

    def show(verdict):
        line = f"{verdict.status:10} {verdict.id}  {verdict.change}"
        if verdict.status == "refuted":
            line += f"\n           {verdict.why}\n           on {verdict.case[:600]}"
        elif verdict.status != "equivalent":
            line += f"\n           {verdict.why}"
        print(line, flush=True)
    try:
        verdicts = check_entries(ids or None, examples=examples, progress=show)
    except ValueError as err:
        print(f"course mutants: {err}", file=sys.stderr)
        return 2
    counts = {s: sum(v.status == s for v in verdicts) for s in ("equivalent", "refuted", "stale", "untested")}
    print(f"{len(verdicts)} entries: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0 if counts["equivalent"] == len(verdicts) else 1


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.check_equivalent is not None:
        return check_equivalent(args.check_equivalent, args.examples)
    unknown = [a for a in args.assignments if a not in course_tasks.ASSIGNMENTS]
    if unknown:
        print(f"course mutants: unknown assignment {', '.join(unknown)}; known: {', '.join(course_tasks.ASSIGNMENTS)}",
              file=sys.stderr)
        return 2
    chosen = args.assignments or list(course_tasks.ASSIGNMENTS)
    wanted = set(args.tasks) if args.tasks else None
    mutants = [m for a in chosen for m in mutants_of(a, wanted)]
    if args.sample:
        mutants = sample(mutants, args.sample)
    equivalent = equivalent_ids()
    start = time.perf_counter()
    outcomes = grade_mutants(mutants, workers=args.workers, together=args.together)
    seconds = time.perf_counter() - start
    table = tally(mutants, outcomes, equivalent)

    print(f"{'task':28} {'mutants':>7} {'killed':>6} {'survived':>8} {'equivalent':>10} {'errors':>6} {'killed %':>8}")
    for task, row in table.items():
        print(f"{task:28} {row['mutants']:7} {row['killed']:6} {row['survived']:8} {row['equivalent']:10} "
              f"{row['errors']:6} {100 * row['killed_fraction']:7.1f}%")
    print(f"{plural(len(mutants), 'mutant')} in {seconds:.0f} s")

    survivors = [m for m in mutants if outcomes[m.id].verdict == "survived" and m.id not in equivalent]
    wrongly_listed = [m for m in mutants if m.id in equivalent and outcomes[m.id].verdict == "killed"]
    errors = [m for m in mutants if outcomes[m.id].verdict == "error"]
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "survivors.md", "w") as out:
        out.write(f"# Surviving mutants ({len(survivors)})\n\nNeither killed nor listed in "
                  f"autograder/equivalent_mutants.toml.\n")
        for mutant in survivors:
            out.write(f"\n## {mutant.id} ({mutant.assignment})\n\n{mutant.summary}\n\n```diff\n{mutant.diff()}```\n")
    summary = {"seconds": round(seconds), "tasks": table,
               "outcomes": {m.id: {"task": m.task, "change": m.summary, **vars(outcomes[m.id])} for m in mutants}}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=list))
    print(f"survivors with their diffs: {args.out / 'survivors.md'}")

    failing = 0
    for mutant in errors:
        print(f"grading error on {mutant.id} ({mutant.summary}): {outcomes[mutant.id].why}", file=sys.stderr)
        failing = 1
    for mutant in wrongly_listed:
        print(f"{mutant.id} is listed as equivalent but the suite kills it: remove it from the list", file=sys.stderr)
        failing = 1
    if not args.sample:
        current = {m.id for m in mutants}
        for stale in sorted(i for i in equivalent if i.rsplit("-", 1)[0] in table and i not in current):
            print(f"{stale} is listed as equivalent but is no mutant of today's reference: judge its task's "
                  f"survivors again and remove it", file=sys.stderr)
            failing = 1
    for task, row in table.items():
        if row["killed_fraction"] < args.require:
            print(f"{task}: {100 * row['killed_fraction']:.1f}% killed, below --require {args.require:.0%}",
                  file=sys.stderr)
            failing = 1
    return failing


if __name__ == "__main__":
    sys.exit(main())
