"""A platform's user id -> the account name that is the gradebook's student id (and, on a hub, the
JupyterHub and Unix user): stable across runs and machines, and safe as a Unix name.

A platform id that is already a safe name (what useradd accepts, course_tools/hub/roster.py's
NAME, and not a system account's name) is kept as it is. Anything else (Canvas's UUIDs: 36
characters; Moodle's numbers: no letter first; an e-mail; non-ASCII; a name like ``root``) is
*mapped*, never passed on: ``lti-`` and 12 hex digits of SHA-256 over the issuer and the id. The
mapping depends only on those two, so every sync (and, later, the hub's launch) finds the same
name; 48 bits make a clash among a course's members about 1 in 10^10, and a clash is refused
(roster.py), never merged.
"""
from __future__ import annotations

import hashlib

from ..hub.roster import NAME

# Names a platform id must not take even when well-formed: system accounts and the hub's own.
RESERVED = frozenset({"root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp",
                      "proxy", "www-data", "backup", "list", "irc", "nobody", "systemd-network", "sshd", "admin",
                      "administrator", "jupyterhub", "jupyter", "grader", "nbgrader", "postgres", "ubuntu", "debian"})
PREFIX = "lti-"


def account_name(issuer: str, user_id: str) -> tuple[str, bool]:
    """(the account name, whether it was mapped) for the platform's ``user_id``."""
    if NAME.fullmatch(user_id) and user_id not in RESERVED and not user_id.startswith(PREFIX):
        return user_id, False
    digest = hashlib.sha256(f"{issuer}\n{user_id}".encode()).hexdigest()
    return PREFIX + digest[:12], True


def why_mapped(user_id: str) -> str:
    """Why a platform id was not kept as the account name (for the roster's report)."""
    if user_id in RESERVED:
        return "a system account's name"
    if user_id.startswith(PREFIX):
        return f"starts with {PREFIX!r}, the mapped names' prefix"
    if not user_id.isascii():
        return "not ASCII"
    if len(user_id) > 31:
        return f"{len(user_id)} characters (at most 31)"
    return "not lower-case letters, digits, '-' and '_' starting with a letter"
