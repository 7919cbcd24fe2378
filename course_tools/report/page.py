"""`course report`: the terminal summary, the self-contained HTML page and the per-check CSV."""
from __future__ import annotations

import csv
import datetime
import html
from pathlib import Path

from course_student.words import plural

from ..table import format_table
from . import figures
from .data import ClassData
from .stats import CheckStats, TaskStats, check_stats, disagreements, miscalibrated, task_stats

TOP_CHECKS = 3


def _num(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}".rstrip("0").rstrip(".")


def _late(seconds: float) -> str:
    hours = seconds / 3600
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if hours < 1 else f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} days"


class Report:
    """Everything `course report` shows, computed once from ClassData."""

    def __init__(self, data: ClassData, progress: tuple | None = None, due=None, lms: list[str] | None = None):
        self.data = data
        self.tasks: list[TaskStats] = task_stats(data)
        self.checks: list[CheckStats] = check_stats(data)
        self.flags = miscalibrated(self.checks)
        self.disagree = disagreements(data)
        self.progress = progress
        self.due = due
        self.lms = lms or []   # lms/summary.py's lines: what the LMS holds, what the next push sends

    # ------------------------------------------------------------------ pieces
    def failing_checks(self, task: str) -> list[CheckStats]:
        failing = [c for c in self.checks if c.task == task and c.failures]
        return sorted(failing, key=lambda c: -c.failures)[:TOP_CHECKS]

    def late(self) -> list:
        return [s for s in self.data.graded if s.seconds_late > 0]

    def own_deadlines(self) -> list:
        """The students whose deadline an extension moves (their lateness counts from it)."""
        return [s for s in self.data.students if s.own_due is not None]

    # ------------------------------------------------------------------ terminal
    def summary(self) -> str:
        d = self.data
        lines = [f"{d.assignment}: {plural(len(d.students), 'submission')}, {len(d.graded)} graded, "
                 f"{plural(len(d.errors), 'grading error')}, {sum(s.blank for s in d.students)} blank"]
        rows = []
        for t in self.tasks:
            top = self.failing_checks(t.task)
            worst = f"{top[0].label[:48]}: {top[0].failures}" if top else ""
            diagnosis = t.diagnoses.most_common(1)
            rows.append([("\u270e " if t.manual else "") + t.task, f"{t.points:g}", _num(t.mean), _num(t.median),
                         f"{100 * t.share('full'):.0f}/{100 * t.share('partial'):.0f}/{100 * t.share('zero'):.0f}",
                         str(t.pending) if t.manual else "", worst,
                         f"{diagnosis[0][0][:40]}: {diagnosis[0][1]}" if diagnosis else ""])
        lines.append(format_table(["task", "points", "mean", "median", "full/part/zero %", "to grade",
                                   "most failed check", "most common mistake"], rows, right={1, 2, 3, 5}))
        for check, why in self.flags:
            lines.append(f"  ! possibly miscalibrated: {check.task}: {check.label}: {why}")
        for student, written, auto in self.disagree:
            lines.append(f"  ! {student}: written answers {100 * written:.0f}%, autograded {100 * auto:.0f}%")
        for s in self.late():
            lines.append(f"  late: {s.student}, {_late(s.seconds_late)}, penalty {s.penalty:g}")
        for s in self.own_deadlines():
            lines.append(f"  own deadline: {s.student}, {s.own_due:%Y-%m-%d %H:%M} UTC (an extension)")
        for student, error in sorted(self.data.errors.items()):
            lines.append(f"  GRADING ERROR (not a score): {student}: {error['error'][:160]}")
        for r in self.data.refused:
            lines.append(f"  REFUSED at collect (not graded): {r.student}: {r.folder}: {r.reason[:160]}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ CSV
    def write_csv(self, path: Path) -> int:
        """The raw per-check table: one row per student and hidden check."""
        rows = 0
        with open(path, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["student", "task", "check", "case", "passed", "message", "diagnosis"])
            for record in self.data.students:
                for task, graded in ((record.result or {}).get("tasks") or {}).items():
                    diagnosis = (graded.get("diagnosis") or {}).get("name", "")
                    for check in graded["checks"]:
                        writer.writerow([record.student, task, check["check"], check.get("case", ""),
                                         int(bool(check["passed"])), check["message"], diagnosis])
                        rows += 1
        return rows

    # ------------------------------------------------------------------ HTML
    def html(self) -> str:
        d = self.data
        e = html.escape
        blanks = sum(s.blank for s in d.students)
        parts = [f"<h1>{e(d.assignment)}: what the grading says</h1>",
                 f"<p class=meta>Generated {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC from the "
                 f"gradebook and the stored hidden-suite results (nothing was graded again). "
                 f"{plural(len(d.students), 'submission')}, {len(d.graded)} graded, {plural(len(d.errors), 'grading error')}, "
                 f"{blanks} handed back the blank release (left out of the per-check counts).</p>"]
        parts.append("<h2>Tasks</h2><table><tr><th>task</th><th>points</th><th>mean</th><th>median</th><th>full</th>"
                     "<th>partial</th><th>zero</th><th>to grade by hand</th><th>graded by</th></tr>")
        for t in self.tasks:
            graders = ", ".join(f"{e(g)} ({n})" for g, n in t.graded_by.most_common()) or ("-" if t.manual else "")
            parts.append(f"<tr><td>{'&#9998; ' if t.manual else ''}{e(t.task)}</td><td>{t.points:g}</td>"
                         f"<td>{_num(t.mean)}</td><td>{_num(t.median)}</td><td>{100 * t.share('full'):.0f}%</td>"
                         f"<td>{100 * t.share('partial'):.0f}%</td><td>{100 * t.share('zero'):.0f}%</td>"
                         f"<td>{t.pending if t.manual else ''}</td><td>{graders}</td></tr>")
        parts.append("</table>")
        parts.append(f"<img alt='score histograms' src='data:image/png;base64,{figures.score_histograms(self.tasks)}'>")
        parts.append("<h2>What the class got wrong</h2>")
        for t in self.tasks:
            top = self.failing_checks(t.task)
            if not top and not t.diagnoses:
                continue
            parts.append(f"<h3>{e(t.task)}</h3><ul>")
            for c in top:
                message = c.top_message()
                said = f"; most often <q>{e(message[0][:300])}</q> ({message[1]})" if message else ""
                cases = ", ".join(f"{e(case)} ({n})" for case, n in c.cases.most_common(3) if case)
                cases = f"; cases failed most: {cases}" if cases else ""
                parts.append(f"<li><b>{e(c.label)}</b>: failed by {c.failures} of {plural(c.runs, 'submission')}{cases}{said}</li>")
            for title, count in t.diagnoses.most_common():
                parts.append(f"<li class=diag><b>Named mistake</b>, {plural(count, 'student')}: {e(title)}</li>")
            parts.append("</ul>")
        if self.checks:
            parts.append(f"<img alt='pass rate per check' src='data:image/png;base64,"
                         f"{figures.check_pass_rates(self.checks)}'>")
        parts.append("<h2>Signals</h2><ul>")
        for check, why in self.flags:
            parts.append(f"<li class=flag>Possibly miscalibrated: <b>{e(check.task)}</b>, {e(check.label)}: {e(why)}</li>")
        for student, written, auto in self.disagree:
            parts.append(f"<li class=flag>{e(student)}: written answers {100 * written:.0f}%, autograded "
                         f"{100 * auto:.0f}% (they disagree strongly)</li>")
        if not self.flags and not self.disagree:
            parts.append("<li>None.</li>")
        parts.append("</ul><h2>Late work</h2>")
        late = self.late()
        parts.append("<table><tr><th>student</th><th>late by</th><th>penalty</th></tr>" + "".join(
            f"<tr><td>{e(s.student)}</td><td>{_late(s.seconds_late)}</td><td>{s.penalty:g}</td></tr>" for s in late)
            + "</table>" if late else "<p>No late submissions.</p>")
        own = self.own_deadlines()
        if own:   # lateness above counts from these
            parts.append("<p>Own deadlines (extensions): " + ", ".join(
                f"{e(s.student)} {s.own_due:%Y-%m-%d %H:%M} UTC" for s in own) + "</p>")
        parts.append("<h2>Grading errors (not scores)</h2>")
        parts.append("<table><tr><th>student</th><th>when</th><th>error</th></tr>" + "".join(
            f"<tr><td>{e(s)}</td><td>{e(err['when'])}</td><td>{e(err['error'])}</td></tr>"
            for s, err in sorted(d.errors.items())) + "</table>" if d.errors else "<p>None.</p>")
        parts.append("<h2>Refused at collect (not graded)</h2>")
        parts.append("<p>Exchange folders that held a link, a special file or another account's files, or that "
                     "another account put in a student's name. Where the student had an earlier genuine "
                     "submission, that one was collected.</p><table><tr><th>student named</th><th>folder</th>"
                     "<th>why</th></tr>" + "".join(
                         f"<tr><td>{e(r.student)}</td><td>{e(r.folder)}</td><td>{e(r.reason)}</td></tr>"
                         for r in d.refused) + "</table>" if d.refused else "<p>None.</p>")
        timed = [(s.submitted, s.final, s.max_score) for s in d.graded if s.submitted is not None]
        parts.append("<h2>Score against submission time</h2>")
        parts.append(f"<img alt='score against time' src='data:image/png;base64,"
                     f"{figures.score_vs_time(timed, self.due)}'>")
        if self.lms:
            parts.append("<h2>The LMS</h2><ul>" + "".join(f"<li>{e(line.strip())}</li>" for line in self.lms)
                         + "</ul>")
        parts.append("<h2>Students</h2>" + self._student_table())
        return _page(f"{d.assignment} report", "\n".join(parts))

    def _student_table(self) -> str:
        e = html.escape
        if self.progress:
            assignments, table = self.progress
            head = "".join(f"<th>{e(a)}</th>" for a in assignments)
            rows = "".join(f"<tr><td>{e(s)}</td>" + "".join(f"<td>{_num(row.get(a))}</td>" for a in assignments)
                           + "</tr>" for s, row in sorted(table.items()))
            return f"<p>Final scores across assignments.</p><table><tr><th>student</th>{head}</tr>{rows}</table>"
        return ""


def _page(title: str, body: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1em; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; font-size: 14px; text-align: left; }}
th {{ background: #f3f3f3; }}
.meta {{ color: #666; }} .flag {{ color: #a33; }} .diag {{ color: #035; }}
img {{ max-width: 100%; }} pre {{ background: #f7f7f7; padding: 6px; overflow-x: auto; }}
</style></head><body>
{body}
</body></html>
"""


def similarity_html(assignment: str, pairs: list, codes: dict, top: int = 20, seconds: float | None = None) -> str:
    """The most similar pairs, each with both students' solution cells side by side and the
    matching lines highlighted. codes: student -> Code (similarity.py)."""
    e = html.escape
    parts = [f"<h1>{e(assignment)}: similar submissions</h1>",
             f"<p class=meta>Solution cells compared after normalising names, comments, docstrings and the order "
             f"of top-level statements; the release's own code does not count. {plural(len(codes), 'submission')} compared"
             + (f" in {seconds:.1f} s" if seconds is not None else "") + ". A high score says where to look, "
             "not who copied.</p>", "<table><tr><th>#</th><th>students</th><th>similarity</th><th>shared "
             "fingerprints</th></tr>"]
    for i, p in enumerate(pairs[:top], 1):
        parts.append(f"<tr><td><a href='#pair{i}'>{i}</a></td><td>{e(p.a)} &amp; {e(p.b)}</td>"
                     f"<td>{100 * p.similarity:.0f}%</td><td>{p.shared}</td></tr>")
    parts.append("</table>")
    for i, p in enumerate(pairs[:top], 1):
        parts.append(f"<h2 id='pair{i}'>{i}. {e(p.a)} &amp; {e(p.b)}: {100 * p.similarity:.0f}%</h2>"
                     "<table class=side><tr>")
        for student, lines in ((p.a, p.lines_a), (p.b, p.lines_b)):
            parts.append(f"<td><b>{e(student)}</b>")
            for cell, source in codes[student].cells.items():
                parts.append(f"<div class=cell>{e(cell)}</div><pre>")
                for n, text in enumerate(source.splitlines(), 1):
                    mark = " class=match" if n in lines.get(cell, ()) else ""
                    parts.append(f"<span{mark}>{e(text) or ' '}</span>\n")
                parts.append("</pre>")
            parts.append("</td>")
        parts.append("</tr></table>")
    style = "<style>.side td { vertical-align: top; width: 50%; } .match { background: #ffe08a; } " \
            ".cell { color: #666; font-size: 12px; margin-top: 6px; }</style>"
    return _page(f"{assignment} similarity", style + "\n".join(parts))
