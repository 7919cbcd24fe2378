"""nbgrader's Validate without freezing the student's Jupyter server (a Jupyter server extension).

nbgrader's Validate handler runs the whole notebook in a kernel inside the request, on the
server's one event loop: for the 20 s or more that takes, the student's JupyterLab gets no
answer to anything (saving, listing files, the kernel's messages). This extension makes the same
handler run the same validation in a worker thread, one validation at a time, so the server
answers everything else meanwhile. The validation itself is nbgrader's, unchanged, and it only
reads the notebook: the file the editor holds is never written.

The course's hub enables it in the students' environment (course_tools/hub/deploy.py); anyone can
with ``jupyter server extension enable course_student.validate_off_loop``.
"""
from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

# One at a time: a student who presses Validate repeatedly queues validations, not kernels.
_VALIDATIONS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="course-validate")


def _jupyter_server_extension_points():
    return [{"module": "course_student.validate_off_loop"}]


def _load_jupyter_server_extension(server_app) -> None:
    from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler
    from tornado import web

    if getattr(ValidateAssignmentHandler, "course_off_loop", False):
        return

    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path")
        if not isinstance(path, str):
            raise web.HTTPError(400, "Validate needs the notebook's path")
        output = await asyncio.get_running_loop().run_in_executor(_VALIDATIONS, self.validate_notebook, path)
        self.finish(json.dumps(output))

    ValidateAssignmentHandler.post = post
    ValidateAssignmentHandler.course_off_loop = True
    server_app.log.info("course: nbgrader's Validate runs off the server's event loop")
