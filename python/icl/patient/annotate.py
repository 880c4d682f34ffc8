"""The single-file annotation page (``annotate.html`` beside this module), served on 127.0.0.1 only.

The page is self-contained: inline script and style, no external resource, and a Content-Security-Policy
that forbids every network request (:mod:`icl.offline_page`).
"""

from __future__ import annotations

import http.server

from icl import offline_page


def page_bytes() -> bytes:
    """Return the annotation page as UTF-8 bytes."""
    return offline_page.page_bytes("icl.patient", "annotate.html")


def make_server(port: int = 0) -> http.server.ThreadingHTTPServer:
    """Bind the page server to 127.0.0.1:``port`` (0 picks a free port)."""
    return offline_page.make_server("icl.patient", "annotate.html", port)
