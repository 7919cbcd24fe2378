"""The service wakes on a submission within seconds even when it started before `course release`
made the exchange's inbound/ (it watches the nearest existing parent until inbound/ exists),
instead of waiting for the periodic rescan."""
from __future__ import annotations

import threading
import time

from course_tools.cli import main as course
from course_tools.course_dir import init_course
from course_tools.demo_class import DemoClass
from course_tools.service.watcher import watch
from grading_support import require_sandbox
from service_support import ASSIGNMENT, blank, drop, kill_9, rows, serve, wait_for


def test_the_watch_moves_down_to_a_folder_made_after_it_started_and_sees_what_arrives_below_it(tmp_path):
    inbound = tmp_path / "exchange" / "course" / "inbound"
    events = []
    watcher = watch(inbound, lambda: events.append(time.monotonic()))
    try:
        assert watcher.watching == tmp_path
        inbound.mkdir(parents=True)
        wait_for(lambda: watcher.watching == inbound, 10, "the watch on inbound/ itself")
        seen = len(events)
        (inbound / "ada+01+stamp").mkdir()
        (inbound / "ada+01+stamp" / "notebook.ipynb").write_text("{}")
        wait_for(lambda: len(events) > seen, 10, "an event for a file two levels below inbound/")
    finally:
        watcher.stop()


def test_a_submission_after_a_release_made_while_the_service_ran_is_graded_before_any_rescan(tmp_path):
    require_sandbox()
    demo = DemoClass(tmp_path, ASSIGNMENT, personas=[])
    init_course(demo.course_dir, "demo", demo.exchange, None)
    service = serve(demo, "--workers", "1", "--rescan", "3600", wait=False)   # no rescan in this test's life
    log: list[str] = []
    threading.Thread(target=lambda: log.extend(service.stdout), daemon=True).start()
    try:
        wait_for(lambda: any("until it does" in line for line in log), 300, "the service watching a parent")
        assert course(["release", ASSIGNMENT, "--course", str(demo.course_dir)]) == 0
        folder = drop(demo, "ada", blank(ASSIGNMENT))
        wait_for(lambda: any(r["folder"] == folder and r["state"] == "done" for r in rows(demo)), 300,
                 "the submission graded through the watch (the rescan is an hour away)", every=1)
    finally:
        kill_9(service)
    assert any(f"watching {demo.exchange / 'demo' / 'inbound'}" in line for line in log), "".join(log)[-2000:]
