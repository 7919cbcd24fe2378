"""A real JupyterHub, in this process, for the launch tests: JupyterHub's own application
(``JupyterHub.initialize``: its database, its handlers, the authenticator's handlers under
/hub/, its login machinery and cookies) served by Tornado on a loopback port, in a thread with
its own event loop. Neither the proxy nor any server is started (no browser here: the requests
are the browser's, made with ``requests``), so it starts in about a second.

``users()`` answers from the hub's database: {name: sorted group names}.
"""
from __future__ import annotations

import asyncio
import os
import socket
import threading
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class InProcessHub:
    def __init__(self, config, state: Path, port: int):
        from traitlets.config import Config

        self.port = port
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = Config(config)
        self.config.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
        self.config.JupyterHub.cookie_secret = os.urandom(32)
        self.config.JupyterHub.bind_url = self.url
        self.config.JupyterHub.hub_port = free_port()
        empty = state / "jupyterhub_config.py"   # the configuration is all in ``config``
        empty.write_text("")
        self.config.JupyterHub.config_file = str(empty)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def _run(self, coroutine, timeout: float = 30):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    async def _start(self):
        from jupyterhub.app import JupyterHub
        from tornado.httpserver import HTTPServer

        self.app = JupyterHub(config=self.config)
        await self.app.initialize([])
        self.server = HTTPServer(self.app.tornado_application, xheaders=True)
        self.server.listen(self.port, "127.0.0.1")

    async def _stop(self):
        self.server.stop()
        self.app.db.close()

    def __enter__(self) -> "InProcessHub":
        self.thread.start()
        self._run(self._start())
        return self

    def __exit__(self, *exc) -> None:
        self._run(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def users(self) -> dict[str, list[str]]:
        async def read():
            from jupyterhub import orm

            self.app.db.expire_all()
            return {u.name: sorted(g.name for g in u.groups) for u in self.app.db.query(orm.User)}

        return self._run(read())
