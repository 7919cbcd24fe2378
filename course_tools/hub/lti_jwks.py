"""GET <hub>/hub/lti13/jwks: the tool's public key set (JWKS) for the LMS, served by the hub.

The platform checks the tool's signed client-credentials assertions (grade and roster requests of
`course lms push` / `roster`) against this key set. The key is the one `course lms keys` made in
the grader account (c.LMS.private_key_file); the hub (root) reads it at each request, with the same
checks as the commands (its place outside the bundle and the exchange, a regular file of the course
folder's owner, mode 0600), so `course lms keys --replace` is served without a restart. The answer
holds the public half only: {"keys": [{"kty": "RSA", "n", "e", "kid", "alg": "RS256", "use": "sig"}]}
(keys.public_key_set); nothing of the private key leaves the handler. A hub without a key answers
404 with what to run.
"""
from __future__ import annotations

import json
from pathlib import Path

from jupyterhub.handlers import BaseHandler

ROUTE = "lti13/jwks"   # under the hub prefix: <hub>/hub/lti13/jwks (lms/launch_urls.py)


class ToolKeySetHandler(BaseHandler):
    """The tool's public JWKS; the authenticator's ``tool_key_file``, ``exchange`` and
    ``tool_key_owner`` say where the key is and whose it must be."""

    def check_xsrf_cookie(self):   # a GET from the LMS's servers: nothing to protect
        return

    async def get(self):
        from ..lms import keys
        from ..lms.registration import LmsError

        auth = self.authenticator
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "max-age=300")
        try:
            pem = keys.load(Path(auth.tool_key_file), Path(auth.exchange), owner=auth.tool_key_owner)
        except LmsError as err:
            self.log.warning("the tool's JWKS cannot be served: %s", err)
            self.set_status(404)
            self.finish(json.dumps({"error": "the tool has no usable key yet: the course's grader runs "
                                             "`course lms keys` (the hub's log says why)"}))
            return
        self.finish(json.dumps(keys.public_key_set(pem)))
