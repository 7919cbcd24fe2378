"""Who can reach a path: the check that keeps hidden material (the hidden suites, solutions,
sources, the repository's history, a gradebook) away from students' accounts.

A student reaches a path when every folder above it lets them through (the x bit) and the path
itself lets them read it (r) or, for a folder, enter it (x: a known name inside it, such as
autograder/04_conv_backward/test_conv_backward.py, can then be opened without listing). Which
bits apply is decided as the kernel decides it: the owner's if the student owns the path, else
the group's if the path's group is one of the student's groups (primary or supplementary),
else the other bits. POSIX ACLs are not read (the course's tools never set any).

    exposed = exposures({checkout: "the course bundle"}, [account("demo-ada")])
    if exposed:
        raise SomeError(refusal(exposed))   # names each path and the chmod that closes it

Used by `make hub` (course_tools/hub), hub/jupyterhub_config.py at the hub's start and
`course init`.
"""
from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

@dataclass(frozen=True)
class Account:
    """Someone a path must stay closed to. ``uid`` None: an account that does not exist (yet),
    for which only the other bits count (a student made later gets a private group of their own)."""
    name: str
    uid: int | None
    groups: frozenset[int]


# Whoever is neither the owner nor in the group: all that counts where the students are not known.
OTHERS = Account("every other account", None, frozenset())


def account(name: str) -> Account:
    """The account ``name`` with all its groups; an unknown name is an account still to be made."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return Account(name, None, frozenset())
    return Account(name, entry.pw_uid, frozenset(os.getgrouplist(name, entry.pw_gid)))


@dataclass(frozen=True)
class Exposure:
    """A path holding hidden material that ``who`` can read or enter."""
    path: Path
    what: str
    who: tuple[str, ...]
    classes: str       # the permission classes that let them in: "o" (others), "g" (the group), "u" (they own it)
    detail: str        # mode, owner and group, as ls shows them

    @property
    def fix(self) -> str:
        """The command that closes the path (run by its owner or root)."""
        if "u" in self.classes:
            return f"chown root {self.path} && chmod go-rwx {self.path}"
        return f"chmod {''.join(c for c in 'go' if c in self.classes)}-rwx {self.path}"

    def __str__(self) -> str:
        whom = {"o": "its bits for other accounts", "g": "its group, which is theirs", "u": "owning it"}
        through = " and ".join(whom[c] for c in self.classes)
        return (f"{self.path} ({self.what}; {self.detail}): readable by {', '.join(self.who)} through {through}\n"
                f"    {self.fix}")


def _owner_names(st: os.stat_result) -> str:
    try:
        user = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        user = str(st.st_uid)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    return f"{stat.filemode(st.st_mode)} {user}:{group}"


def _class_of(st: os.stat_result, who: Account) -> str:
    if who.uid is not None and st.st_uid == who.uid:
        return "u"
    if st.st_gid in who.groups:
        return "g"
    return "o"


def _allows(st: os.stat_result, cls: str, bits: int) -> bool:
    shift = {"u": 6, "g": 3, "o": 0}[cls]
    return bool((st.st_mode >> shift) & bits)


def reaching(path: Path, who: Account) -> str:
    """The permission class through which ``who`` reads or enters ``path``, or "" when they
    cannot (a folder above it closed to them, or the path itself)."""
    path = Path(os.path.realpath(path))
    for parent in reversed(path.parents):
        if not _allows(parent.stat(), _class_of(parent.stat(), who), 0o1):
            return ""
    st = path.stat()
    cls = _class_of(st, who)
    wanted = 0o5 if stat.S_ISDIR(st.st_mode) else 0o4
    return cls if _allows(st, cls, wanted) else ""


def exposures(paths: dict[Path, str], accounts: list[Account]) -> list[Exposure]:
    """The paths among ``paths`` (path: what it holds) that any of ``accounts`` can read or
    enter. A path inside one already reported is left out (closing the outer one closes it);
    paths that do not exist are skipped."""
    found: list[Exposure] = []
    real = {Path(os.path.realpath(p)): what for p, what in paths.items() if os.path.lexists(p)}
    for path in sorted(real, key=lambda p: len(p.parts)):
        if any(path == e.path or e.path in path.parents for e in found):
            continue
        st = path.stat()
        by_class: dict[str, list[str]] = {}
        for who in accounts:
            cls = reaching(path, who)
            if cls:
                by_class.setdefault(cls, []).append(who.name)
        if by_class:
            who = tuple(dict.fromkeys(name for names in by_class.values() for name in names))
            classes = "".join(c for c in "ugo" if c in by_class)
            found.append(Exposure(path, real[path], who, classes, _owner_names(st)))
    return found


def refusal(found: list[Exposure], action: str) -> str:
    """The message that refuses ``action`` (e.g. "the hub does not start"), each path with its fix."""
    lines = [f"{action}: students could read hidden material (hidden suites, solutions, gradebooks). "
             f"Close each path below with the command under it, then try again:"]
    lines += [f"  {exposure}" for exposure in found]
    return "\n".join(lines)
