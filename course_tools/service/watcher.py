"""Waking the service when something changes in the exchange's inbound/ (watchdog: inotify on
Linux), so that a submission is picked up within a second instead of at the next rescan. The
events carry no trust: they only say "look again"; what is graded is what intake.py reads."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

log = logging.getLogger("course.serve")


def watch(folder: Path, changed: Callable[[], None]):
    """Call ``changed()`` on every filesystem event under ``folder``; returns the observer (stop() it),
    or None when the folder cannot be watched (the periodic rescan still finds everything)."""
    try:
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
    except ImportError:   # an environment built before the dependency was added
        log.warning("watchdog is not installed (the grader's environment has it: pip install -e '.[test]'): "
                    "relying on the periodic rescan")
        return None

    class _Wake(FileSystemEventHandler):
        def on_any_event(self, event):
            changed()

    observer = Observer()
    try:
        observer.schedule(_Wake(), str(folder), recursive=True)
        observer.daemon = True
        observer.start()
    except OSError as err:   # no such folder yet, or out of inotify watches
        log.warning("not watching %s (%s): relying on the periodic rescan", folder, err)
        return None
    return observer
