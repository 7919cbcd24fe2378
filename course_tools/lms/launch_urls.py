"""Where the hub serves the LTI 1.3 login and launch, for `course lms config` and the docs.

jupyterhub-ltiauthenticator's handlers are ``lti13/oauth_login`` (login initiation),
``lti13/oauth_callback`` (the redirect URI: the platform's form post of the id_token; POST only)
and ``lti13/config`` (its JSON configuration); the course adds ``lti13/jwks`` (the tool's public
key set, course_tools/hub/lti_jwks.py). JupyterHub mounts them under its hub prefix,
``<base_url>hub/``. tests/test_lms_launch.py checks these against the installed library and a
running hub. Kept free of imports so that `course lms config` needs neither JupyterHub nor the
library.
"""
from __future__ import annotations


def launch_urls(hub_url: str) -> dict[str, str]:
    """For the hub's public URL ``hub_url`` (with its base_url, e.g. https://hub.example.edu or
    https://example.edu/jupyter): {"login": the login initiation URL, "redirect": the redirect URI,
    "target": the target link URI, "config": the library's JSON configuration, "jwks": the tool's
    public key set}.

    The target link URI is the hub itself, never the redirect URI: after the login the library
    sends the user to the target's path, and the redirect URI answers a GET with 405.
    """
    hub = hub_url.rstrip("/") + "/hub"
    return {"login": f"{hub}/lti13/oauth_login", "redirect": f"{hub}/lti13/oauth_callback", "target": hub,
            "config": f"{hub}/lti13/config", "jwks": f"{hub}/lti13/jwks"}
