"""Waking the service when something changes in the exchange's inbound/ (watchdog: inotify on
Linux), so that a submission is picked up within a second instead of at the next rescan. The
events carry no trust: they only say "look again"; what is graded is what intake.py reads.

The service may start before `course release` has made inbound/ (a new course, a new semester):
then the nearest folder above it that exists is watched, one level deep, and each event there
moves the watch down, until inbound/ itself is watched with everything below it."""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Callable

log = logging.getLogger("course.serve")


def _nearest_existing(folder: Path) -> Path:
    """``folder`` itself when it is a directory, else the closest of its parents that is."""
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            return candidate
    return Path("/")


class FolderWatch:
    """Calls ``changed()`` on every filesystem event under ``folder`` (recursively), and watches
    the nearest existing parent until ``folder`` exists. ``stop()`` ends it."""

    def __init__(self, folder: Path, changed: Callable[[], None], observer_type):
        self.folder = folder
        self.changed = changed
        self.observer = observer_type()
        self.observer.daemon = True
        self._lock = threading.Lock()
        self._watch = None
        self._watched: Path | None = None

    @property
    def watching(self) -> Path | None:
        """The folder watched now: ``folder`` once it exists, a parent of it before."""
        return self._watched

    def start(self) -> None:
        self._move_watch()
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()

    def _move_watch(self) -> None:
        from watchdog.events import FileSystemEventHandler

        service = self

        class _Event(FileSystemEventHandler):
            def on_any_event(self, event):
                if service._watched != service.folder:
                    service._move_watch()
                service.changed()

        with self._lock:
            # A folder made below the one watched before its watch was in place gives no event
            # (`mkdir -p` makes exchange/, course/ and inbound/ within microseconds): so look
            # again once the watch stands, until the nearest existing folder is the one watched.
            while (target := _nearest_existing(self.folder)) != self._watched:
                if self._watch is not None:
                    self.observer.unschedule(self._watch)
                arrived = target == self.folder
                self._watch = self.observer.schedule(_Event(), str(target), recursive=arrived)
                self._watched = target
                if arrived:
                    log.info("watching %s", self.folder)
                else:
                    log.info("%s does not exist yet: watching %s until it does", self.folder, target)


def watch(folder: Path, changed: Callable[[], None]) -> FolderWatch | None:
    """Call ``changed()`` on every filesystem event under ``folder``; returns the watch (stop() it),
    or None when nothing can be watched (the periodic rescan still finds everything)."""
    try:
        from watchdog.observers import Observer
    except ImportError:   # an environment built before the dependency was added
        log.warning("watchdog is not installed (the grader's environment has it: pip install -e '.[test]'): "
                    "relying on the periodic rescan")
        return None
    watcher = FolderWatch(folder, changed, Observer)
    try:
        watcher.start()
    except OSError as err:   # out of inotify watches, or a folder that vanished while it was scheduled
        log.warning("not watching %s (%s): relying on the periodic rescan", folder, err)
        return None
    return watcher
