"""The exchange's folders are the grader's: checked before `course serve` and `course collect` use them.

nbgrader's exchange, as its own release makes it (nbgrader/exchange/default/release_assignment.py)
and as a hub deploys it:

    <exchange>/                  01777, owned by root or the grader: everyone may add an entry,
                                 nobody may rename or remove another's (the sticky bit)
    <exchange>/<course>/         0755, the grader's
    <exchange>/<course>/outbound 0755, the grader's (releases students fetch)
    <exchange>/<course>/inbound  02733, the grader's (students drop submissions; nobody lists them)
    <exchange>/<course>/feedback 0711, the grader's (pages under names only their secret gives)

Without the sticky bit on a world-writable exchange, any student can rename the course folder
aside and put their own in its place: classmates then fetch the student's copy of a release,
submit into the student's inbound/ and get their pages published into the student's feedback/.
So each folder must be a real folder (not a link), owned by the grader (or root), writable by
nobody else, and the two drop boxes must not be listable; anything else is refused, naming the
folder and what is wrong with it (ExchangeTakeover, a CourseError).
"""
from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from .course_dir import Course, CourseError

EXCHANGE_MODE = 0o1777


class ExchangeTakeover(CourseError):
    """A folder of the exchange is not the one the grader made; the message says which and why."""


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _trusted() -> set[int]:
    return {0, os.geteuid()}


def _folder(path: Path, follow: bool = False) -> os.stat_result:
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise ExchangeTakeover(f"the exchange folder {path} cannot be examined ({err.strerror})") from None
    if stat.S_ISLNK(info.st_mode):
        raise ExchangeTakeover(f"the exchange folder {path} is a symbolic link (to {os.readlink(path)}), not the "
                               f"folder the grader made: refusing to use it")
    if not stat.S_ISDIR(info.st_mode):
        raise ExchangeTakeover(f"{path} is not a folder: refusing to use it as the exchange's")
    if info.st_uid not in _trusted():
        raise ExchangeTakeover(f"the exchange folder {path} is owned by {_owner(info.st_uid)}, not by the grader "
                               f"({_owner(os.geteuid())}): someone replaced it; refusing to use it (move it aside and "
                               f"release again)")
    return info


def check_root(exchange: Path) -> None:
    """The exchange's root: writable by everyone only with the sticky bit (links to it are followed:
    an administrator may point the exchange elsewhere)."""
    try:
        info = _folder(exchange, follow=True)
    except FileNotFoundError:
        raise ExchangeTakeover(f"the exchange {exchange} does not exist (course init makes it)") from None
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise ExchangeTakeover(
            f"the exchange {exchange} is writable by every account without the sticky bit (mode "
            f"{stat.S_IMODE(info.st_mode):04o}): any student can move the course's folder aside and put their own in "
            f"its place. As its owner run: chmod 1777 {exchange}")


def check_course(exchange: Path, course_id: str, parts: tuple[str, ...] = ("outbound", "inbound", "feedback")) -> None:
    """The root, the course's folder and its ``parts`` that exist, as the module docstring says."""
    check_root(exchange)
    course = exchange / course_id
    try:
        info = _folder(course)
    except FileNotFoundError:
        return   # nothing released yet: whoever releases first makes it (nbgrader refuses one it does not own)
    _not_writable_by_others(course, info)
    for part in parts:
        path = course / part
        try:
            info = _folder(path)
        except FileNotFoundError:
            continue
        if part == "inbound":
            if info.st_mode & 0o044:
                raise ExchangeTakeover(f"the exchange folder {path} can be listed by other accounts (mode "
                                       f"{stat.S_IMODE(info.st_mode):04o}): students could read each other's "
                                       f"submissions. As its owner run: chmod 2733 {path}")
        else:
            _not_writable_by_others(path, info)
            if part == "feedback" and info.st_mode & 0o044:
                raise ExchangeTakeover(f"the exchange folder {path} can be listed by other accounts (mode "
                                       f"{stat.S_IMODE(info.st_mode):04o}): students could find each other's feedback. "
                                       f"As its owner run: chmod 0711 {path}")


def _not_writable_by_others(path: Path, info: os.stat_result) -> None:
    if info.st_mode & 0o022:
        raise ExchangeTakeover(f"the exchange folder {path} is writable by other accounts (mode "
                               f"{stat.S_IMODE(info.st_mode):04o}): refusing to use it. As its owner run: "
                               f"chmod go-w {path}")


def released_assignments(course: Course) -> list[str]:
    """Assignments in the exchange's outbound folder that this bundle grades."""
    from course_lib.tasks import ASSIGNMENTS

    outbound = course.exchange / course.course_id / "outbound"
    return [a for a in ASSIGNMENTS if (outbound / a).is_dir()]
