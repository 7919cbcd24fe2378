"""The nonces of LTI launches the hub has accepted, so that each is accepted once.

The LTI 1.3 security framework requires the tool to refuse a launch whose ``nonce`` it has seen
before. jupyterhub-ltiauthenticator (1.6) only compares the nonce with a hash of a value in an
encrypted cookie: whoever captured a launch's form post *and* its cookies could post it again
until the token expires, and be logged in again. This store remembers every accepted nonce until
its token's ``exp`` (after which PyJWT refuses the token anyway). It is a SQLite file in the hub's
state folder, so a hub restarted within those minutes still refuses the replay; the primary key
makes "first use" one atomic insert, also between two requests at once.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path


class UsedNonces:
    """Nonces already used, each until its expiry. ``path`` None: in memory (one process)."""

    def __init__(self, path: Path | None = None):
        self._db = sqlite3.connect(str(path) if path else ":memory:", isolation_level=None,
                                   check_same_thread=False)
        if path:
            Path(path).chmod(0o600)   # nothing secret, but nobody else's business either
        self._db.execute("CREATE TABLE IF NOT EXISTS used_nonce (nonce TEXT PRIMARY KEY, expires REAL NOT NULL)")

    def first_use(self, nonce: str, expires: float) -> bool:
        """Record ``nonce`` (valid until ``expires``, epoch seconds); False if it was used before."""
        self._db.execute("DELETE FROM used_nonce WHERE expires < ?", (time.time(),))
        try:
            self._db.execute("INSERT INTO used_nonce (nonce, expires) VALUES (?, ?)", (nonce, float(expires)))
        except sqlite3.IntegrityError:
            return False
        return True
