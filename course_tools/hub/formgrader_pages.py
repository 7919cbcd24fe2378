"""formgrader's pages as the graders' service serves them on a hub: links that lead to the
service, and math typeset (a Jupyter server extension of the graders' service, enabled by deploy.py).

nbgrader's formgrader links an assignment's name and its Preview to the assignment's folders. In
JupyterLab's Formgrader panel it opens them in the file browser; in a browser tab of its own
(/services/<course id>/formgrader) it writes ``href="/tree/<path>"``, which is the hub's root on
a hub, not the service (a 404). This extension puts the server's base URL in front of those
hrefs, in the pages formgrader renders; the panel's links it leaves alone. (The folders themselves
are in the course folder since `course init` links source/ and release/ there, course_dir.py.)

The grading page renders the submission with formgrader's own exporter, not with the page
renderer, whose template folders formgrader sets over the configured ones: the extension puts the
course's MathJax macro first there too (course_tools/mathjax.py), so the TA sees a derivation's
math typeset, offline, and gives the exporter's page the same link fix, so that its "Submission #N"
(Open live notebook) link leads to the service's notebook, not to a 404 at the hub's root.
"""
from __future__ import annotations

import json

# Where formgrader's pages load the script that defines linkTo(type, path); the fix follows it.
UTILS_SCRIPT = '/formgrader/static/js/utils.js"></script>'

LINKS_FROM_THE_SERVER = """
<script>
// course_tools/hub/formgrader_pages.py: in a tab of its own, formgrader's links start at the
// server's base URL ({base}), not at the hub's root.
(function () {{
    var linkFromTheRoot = linkTo;
    linkTo = function (type, path) {{
        var connect = linkFromTheRoot(type, path);
        if (window !== window.top) {{
            return connect;  // JupyterLab's panel: the file browser opens the path
        }}
        return function (index, element) {{
            var link = connect(index, element);
            link.setAttribute("href", {base} + link.getAttribute("href"));
            return link;
        }};
    }};
}})();
</script>"""


def with_server_links(html: str, base_url: str) -> str:
    """A formgrader page whose links are under ``base_url`` (e.g. /services/dlsys); pages without
    formgrader's link script come back as they are."""
    fix = LINKS_FROM_THE_SERVER.format(base=json.dumps(base_url.rstrip("/")))
    return html.replace(UTILS_SCRIPT, UTILS_SCRIPT + fix, 1)


# ------------------------------------------------------------------------------ the server extension
def _jupyter_server_extension_points():
    return [{"module": "course_tools.hub.formgrader_pages"}]


def _load_jupyter_server_extension(server_app):
    """Wrap formgrader's page rendering (every page it renders gets the base URL fix) and its
    exporter (the grading page gets the course's MathJax)."""
    from nbgrader.server_extensions.formgrader import base

    from ..mathjax import with_local_mathjax

    original_render, original_exporter = base.BaseHandler.render, base.BaseHandler.exporter

    def render(self, name, **ns):
        return with_server_links(original_render(self, name, **ns), self.base_url)

    def exporter(self):
        made = original_exporter.fget(self)
        with_local_mathjax(made)
        if getattr(made, "course_links_fixed", False):   # one exporter for the whole server: wrap it once
            return made
        from_filename, base_url = made.from_filename, self.base_url

        def with_links(*args, **kwargs):   # the grading page: formgrader writes what this returns
            html, resources = from_filename(*args, **kwargs)
            return with_server_links(html, base_url), resources

        made.from_filename, made.course_links_fixed = with_links, True
        return made

    base.BaseHandler.render = render
    base.BaseHandler.exporter = property(exporter)
    server_app.log.info("course formgrader pages: links under %s, MathJax from the server", server_app.base_url)
