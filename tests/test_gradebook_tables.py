"""A new course database opened by several processes at the same moment (`course release` and a
grading service starting, two services on one new course): each finds the tables made, none
fails with "table ... already exists" (gradebook_tables.py)."""
from __future__ import annotations

import multiprocessing

from course_tools.course_dir import Course, init_course
from course_tools.service.queue import Queue


def _open_at_once(root: str, start, what: str, results) -> None:
    start.wait()
    try:
        if what == "gradebook":
            Course(root).gradebook(must_exist=False).close()
        else:
            Queue(Course(root).db_url).close()
        results.put("ok")
    except Exception as err:  # noqa: BLE001 - the test reports what failed
        results.put(f"{what}: {type(err).__name__}: {str(err)[:200]}")


def test_six_processes_opening_a_new_gradebook_at_once_all_find_its_tables(tmp_path):
    init_course(tmp_path / "course", "demo", tmp_path / "exchange")
    context = multiprocessing.get_context("fork")
    start, results = context.Event(), context.Queue()
    jobs = [context.Process(target=_open_at_once, args=(str(tmp_path / "course"), start, what, results))
            for what in ("gradebook", "queue") * 3]
    for job in jobs:
        job.start()
    start.set()
    outcomes = [results.get(timeout=120) for _ in jobs]
    for job in jobs:
        job.join(timeout=60)
    assert outcomes == ["ok"] * len(jobs), outcomes
    with Course(tmp_path / "course").gradebook() as gradebook:
        assert gradebook.assignments == []
