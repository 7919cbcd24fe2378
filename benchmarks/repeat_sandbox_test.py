"""Run one sandbox test many times in a row and report every failure, with what the worker's
cgroup saw (not a test: a check that a test is deterministic, issue 27).

    .venv/bin/python benchmarks/repeat_sandbox_test.py -n 100
    .venv/bin/python benchmarks/repeat_sandbox_test.py -n 100 --neighbour busy
    .venv/bin/python benchmarks/repeat_sandbox_test.py -n 20 "tests/test_grading_sandbox.py::test_x[case]"

The test (default: the memory bomb of test_hostile_submission_gets_what_it_deserves) runs N
times in one process (pytest.main N times). For each worker it started, the script records how it ended:
the exit status, the cell errors and fatal message of the result, and its cgroup's memory
counters (limit hits, OOM kills, peak) and CPU seconds, read just before the group is removed.
With --neighbour, another grading runs in a loop beside it the whole time (a separate
process): ``busy`` is a submission whose cells start busy loops under os.setsid(), ``honest``
the solution, ``memory_bomb`` the memory bomb again.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

DEFAULT_TEST = "tests/test_grading_sandbox.py::test_hostile_submission_gets_what_it_deserves[memory_bomb]"
NEIGHBOURS = {
    "honest": "",
    "busy": "import os\nfor _ in range(6):\n    if os.fork() == 0:\n        os.setsid()\n        while True:\n"
            "            pass\nwhile True:\n    pass",
    "memory_bomb": "hog = []\nwhile True:\n    hog.append(bytearray(10**8))",
}


def _cgroup_evidence(group) -> dict:
    """The counters of a worker's cgroup that say which limit it met (v1 and v2 names)."""
    seen = {}
    for kind, folder in group.dirs.items():
        for name in ("memory.events", "memory.failcnt", "memory.max_usage_in_bytes", "memory.peak",
                     "memory.oom_control", "cpu.stat", "cpuacct.usage", "pids.events"):
            path = folder / name
            if path.exists():
                try:
                    text = path.read_text().strip()
                except OSError:
                    continue
                if name == "cpu.stat":
                    text = " ".join(line for line in text.splitlines() if "usage" in line or "throttled" in line)
                seen[f"{kind}/{name}"] = " ".join(text.split())
    return seen


class Recorder:
    """A pytest plugin: a record of each run of a test and of the workers it started."""

    def __init__(self):
        self.runs: list[dict] = []
        self.workers: list[dict] = []

    def pytest_runtest_setup(self, item):
        self.workers = []
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.failed:
            self.runs.append({"outcome": report.outcome, "when": report.when,
                              "seconds": round(time.monotonic() - self.started, 1),
                              "load": os.getloadavg()[0], "workers": self.workers,
                              "error": str(report.longrepr)[-1500:] if report.failed else ""})
            print(f"run {len(self.runs)}: {report.outcome} ({self.runs[-1]['seconds']} s, load "
                  f"{self.runs[-1]['load']:.2f})", flush=True)
            if report.failed:  # at once too: a long loop may be stopped before its summary
                for worker in self.workers:
                    print("    worker:", json.dumps(worker)[:1500], flush=True)


def _record_workers(plugin: Recorder) -> None:
    """Wrap the session's stop and the cgroup's removal to keep what they are about to throw away."""
    from course_tools.grading.sandbox import cgroups
    from course_tools.grading.session import session

    remove, stop = cgroups.Cgroup.remove, session.StudentSession._stop

    def remove_recorded(group):
        if group.dirs:
            plugin.workers.append({"cgroup": _cgroup_evidence(group)})
        return remove(group)

    def stop_recorded(self):
        process = self.process
        stop(self)
        if process is not None:
            entry = {"exit": process.returncode, "fatal": self.fatal,
                     "cell_errors": self.loaded_cell_errors()}
            if plugin.workers and "exit" not in plugin.workers[-1]:
                plugin.workers[-1].update(entry)
            else:
                plugin.workers.append(entry)

    cgroups.Cgroup.remove, session.StudentSession._stop = remove_recorded, stop_recorded


def neighbour_loop(kind: str, stop_file: Path) -> None:
    """Grade the ``kind`` submission again and again until ``stop_file`` exists."""
    import nbformat

    from course_tools.grading.suite.run import run_suite
    from grading_support import HOSTILE_LIMITS, inject, source

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "01_forward_ops.ipynb"
        nb = source("01_forward_ops")
        nbformat.write(inject(nb, NEIGHBOURS[kind]) if NEIGHBOURS[kind] else nb, str(path))
        while not stop_file.exists():
            run_suite("01_forward_ops", path, **HOSTILE_LIMITS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="*", default=[DEFAULT_TEST], help="pytest node ids")
    parser.add_argument("-n", "--times", type=int, default=100)
    parser.add_argument("--neighbour", choices=sorted(NEIGHBOURS), default=None)
    parser.add_argument("--json", type=Path, default=None, help="write every run's record here")
    parser.add_argument("--neighbour-loop", help=argparse.SUPPRESS)
    parser.add_argument("--stop-file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.neighbour_loop:
        neighbour_loop(args.neighbour_loop, args.stop_file)
        return 0

    import pytest

    os.chdir(ROOT)
    neighbour, stop_file = None, Path(tempfile.mkdtemp()) / "stop"
    if args.neighbour:
        neighbour = subprocess.Popen([sys.executable, __file__, "--neighbour-loop", args.neighbour,
                                      "--stop-file", str(stop_file)], cwd=ROOT)
    plugin = Recorder()
    _record_workers(plugin)
    began = time.monotonic()
    try:
        for _ in range(args.times):  # one pytest run each: fixtures and parameters set up afresh
            pytest.main([*args.tests, "-qq", "-p", "no:cacheprovider", "--tb=no", "--no-header"], plugins=[plugin])
    finally:
        stop_file.touch()
        if neighbour is not None:
            neighbour.wait()
    failed = [(i + 1, run) for i, run in enumerate(plugin.runs) if run["outcome"] != "passed"]
    print(f"\n{len(plugin.runs)} runs in {time.monotonic() - began:.0f} s, {len(failed)} failed"
          f"{' (neighbour: ' + args.neighbour + ')' if args.neighbour else ''}; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for number, run in failed:
        print(f"--- run {number} ({run['seconds']} s, load {run['load']:.2f}): {run['error'][-600:]}")
        for worker in run["workers"]:
            print("    worker:", json.dumps(worker)[:1500])
    if args.json:
        args.json.write_text(json.dumps(plugin.runs, indent=1))
    return 1 if failed or not plugin.runs else 0


if __name__ == "__main__":
    sys.exit(main())
