"""nbgrader's Gradebook on a real PostgreSQL server (tests/postgres_server.py, fixture postgres_url)."""
from __future__ import annotations

import functools
import multiprocessing
import traceback

import nbgrader.api
import pytest
from nbgrader.api import Gradebook

from course_tools import build as course_build
from postgres_server import PostgresServer, find_postgres_bin

STUDENTS_PER_WRITER = 20


def _write_students(url: str, prefix: str, barrier, errors):
    """One writer process: its own Gradebook, then (with the other writer, at the same time)
    its students, one commit each."""
    try:
        with Gradebook(url) as gb:
            barrier.wait(timeout=30)
            for i in range(STUDENTS_PER_WRITER):
                gb.add_student(f"{prefix}-{i:02d}", first_name=prefix, last_name=str(i))
    except BaseException:
        errors.put(f"writer {prefix}:\n{traceback.format_exc()}")
        raise SystemExit(1)


# A Gradebook on an empty database runs `alembic heads` (a subprocess that takes ~2.5 s) for
# the schema version it records: the answer depends only on the installed nbgrader, so it is
# asked once per session.
_alembic_version = functools.cache(nbgrader.api.get_alembic_version)


@pytest.fixture(autouse=True)
def alembic_once(monkeypatch):
    monkeypatch.setenv("PATH", course_build.tool_env()["PATH"])  # `alembic` is this venv's script
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", _alembic_version)


def test_find_postgres_bin_has_the_server_programs(postgres_server):
    bin_dir = find_postgres_bin()
    assert bin_dir is not None
    for name in ("initdb", "pg_ctl", "postgres"):
        assert (bin_dir / name).exists(), name


def test_gradebook_round_trip(postgres_url):
    with Gradebook(postgres_url) as gb:
        gb.add_assignment("ps1", duedate="2031-01-15 17:00:00")
        gb.add_student("ada", first_name="Ada", last_name="Lovelace", email="ada@example.org")
        gb.db.commit()
    with Gradebook(postgres_url) as gb:  # a second connection sees what the first committed
        assert [a.name for a in gb.assignments] == ["ps1"]
        assert str(gb.find_assignment("ps1").duedate) == "2031-01-15 17:00:00"
        student = gb.find_student("ada")
        assert (student.first_name, student.last_name, student.email) == ("Ada", "Lovelace", "ada@example.org")
        assert gb.engine.dialect.name == "postgresql"


def test_two_processes_write_the_same_gradebook(postgres_url):
    with Gradebook(postgres_url):  # the tables and the course row, before the writers start
        pass
    # fork: the children have nbgrader imported already (a fresh interpreter takes ~2 s for it);
    # they leave with os._exit, so the parent's atexit handlers (the server's stop) do not run.
    mp = multiprocessing.get_context("fork")
    barrier, errors = mp.Barrier(2), mp.SimpleQueue()
    writers = [mp.Process(target=_write_students, args=(postgres_url, prefix, barrier, errors))
               for prefix in ("left", "right")]
    for w in writers:
        w.start()
    for w in writers:
        w.join(timeout=60)
        if w.is_alive():
            w.kill()
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert not failures, "\n".join(failures)
    assert [w.exitcode for w in writers] == [0, 0]

    with Gradebook(postgres_url) as gb:
        ids = sorted(s.id for s in gb.students)
    expected = sorted(f"{p}-{i:02d}" for p in ("left", "right") for i in range(STUDENTS_PER_WRITER))
    assert ids == expected


def test_server_stops_and_cleans_up(tmp_path, postgres_server):
    """A second, separate server: URL shape, and stop() kills it and removes its directory."""
    import psycopg2

    server = PostgresServer(tmp_path).start()
    try:
        assert server.port != postgres_server.port
        url = server.create_database("solo")
        assert url == f"postgresql+psycopg2://course@127.0.0.1:{server.port}/solo"
        with psycopg2.connect(host="127.0.0.1", port=server.port, user="course", dbname="solo") as conn:
            with conn.cursor() as cur:
                cur.execute("SELECT current_database(), current_setting('fsync')")
                assert cur.fetchone() == ("solo", "off")
        conn.close()
        directory = server.dir
        assert (directory / "data" / "postmaster.pid").exists()
    finally:
        server.stop()
    assert not directory.exists()
    with pytest.raises(psycopg2.OperationalError):
        psycopg2.connect(host="127.0.0.1", port=server.port, user="course", dbname="solo", connect_timeout=2)
    server.stop()  # idempotent
