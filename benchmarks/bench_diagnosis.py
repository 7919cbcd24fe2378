"""How often the feedback names the mistake: the wrong-submission catalogue and the solutions, graded.

    .venv/bin/python benchmarks/bench_diagnosis.py                      # every assignment (~6 min)
    .venv/bin/python benchmarks/bench_diagnosis.py --assignment 04_conv_backward --list

Every realistic wrong submission of tests/fixtures/wrong_submissions (the solution notebook with
a student's mistake written into it) is graded by its hidden suite, as are the solutions. Each
wrong submission then counts as

    right   the feedback names the misconception the catalogue says it makes
    none    no diagnosis: the feedback is today's message only
    wrong   a diagnosis the catalogue does not claim for it (must be 0)

and a solution with any diagnosis counts as wrong too. The exit status is 1 when anything is wrong.

With --course-check the same submissions go through `course check` instead (the visible checks
in a fresh kernel, then course_check's probes for the failed tasks, see course_tools/grading/
probes.py): the diagnosis a self-paced learner gets offline. Slower: every notebook runs in full.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from course_lib import tasks  # noqa: E402
from grading_support import grade, source, wrong_catalogue  # noqa: E402

from course_tools.demo_class import apply_edits  # noqa: E402
from course_tools.grading.diagnosis.diagnosis import misconceptions_of  # noqa: E402


def graded_diagnoses(assignment: str, nb) -> dict:
    """{task: misconception} the hidden suite's feedback names."""
    with tempfile.TemporaryDirectory() as folder:
        result = grade(assignment, nb, folder)
    if result.get("grading_error"):
        raise SystemExit(f"{assignment}: grading error: {result['grading_error']}")
    return {task: g["diagnosis"]["name"] for task, g in result["tasks"].items() if g.get("diagnosis")}


def checked_diagnoses(assignment: str, nb) -> dict:
    """{task: misconception} `course check` names, the notebook alone in a folder (the installed,
    reference course_lib underneath, as in a clone of the bundle)."""
    import nbformat

    from course_student.check import check_notebook

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{assignment}.ipynb"
        nbformat.write(nb, str(path))
        report = check_notebook(path, progress=False)
    return {t.task: t.diagnosis["name"] for t in report.tasks if t.diagnosis}


def measure(assignment: str, show: bool, diagnoses_of=graded_diagnoses) -> dict:
    start = time.perf_counter()
    row = {"cases": 0, "right": 0, "none": 0, "wrong": 0, "claimed": 0, "near_misses": 0, "wrong_on_near_misses": 0,
           "misconceptions": len(misconceptions_of(assignment))}
    row["solution"] = len(diagnoses_of(assignment, source(assignment)))
    for case in wrong_catalogue(assignment):
        got = diagnoses_of(assignment, apply_edits(source(assignment), case["edits"]))
        claimed = case.get("diagnosis", {})
        verdict = "wrong" if any(claimed.get(t) != name for t, name in got.items()) else "right" if got else "none"
        row["cases"] += 1
        row[verdict] += 1
        row["claimed"] += bool(claimed)
        if "near_miss_of" in case:  # a mistake that resembles a misconception: no name allowed but its claim
            row["near_misses"] += 1
            row["wrong_on_near_misses"] += verdict == "wrong"
        if show or verdict == "wrong":
            print(f"  {verdict:5s} {case['name']:48s} {', '.join(f'{t}: {n}' for t, n in got.items()) or '-'}")
    row["seconds"] = time.perf_counter() - start
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", action="append", choices=list(tasks.ASSIGNMENTS),
                        help="only this assignment (repeatable); default: all")
    parser.add_argument("--list", action="store_true", help="print every case's verdict and diagnosis")
    parser.add_argument("--course-check", action="store_true", help="diagnose with `course check` instead")
    args = parser.parse_args(argv)

    rows = {}
    for assignment in args.assignment or list(tasks.ASSIGNMENTS):
        print(f"{assignment} ...", flush=True)
        rows[assignment] = measure(assignment, args.list, checked_diagnoses if args.course_check else graded_diagnoses)
    total = {key: sum(r[key] for r in rows.values()) for key in next(iter(rows.values()))}
    head = ("assignment", "misconc.", "wrong subm.", "claimed", "right", "none", "wrong", "solution diag.", "seconds")
    print("\n" + " | ".join(head))
    for name, r in list(rows.items()) + [("total", total)]:
        print(" | ".join([name, str(r["misconceptions"]), str(r["cases"]), str(r["claimed"]), str(r["right"]),
                          str(r["none"]), str(r["wrong"]), str(r["solution"]), f"{r['seconds']:.0f}"]))
    missed = total["claimed"] - total["right"]
    print(f"\n{total['right']} of {total['cases']} wrong submissions named right, {total['none']} with no diagnosis, "
          f"{total['wrong']} wrong ({total['wrong_on_near_misses']} of them on the {total['near_misses']} near misses); "
          f"{missed} claimed diagnoses not made; {total['solution']} diagnoses on solutions")
    return 1 if total["wrong"] or total["solution"] else 0


if __name__ == "__main__":
    sys.exit(main())
