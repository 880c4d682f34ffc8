"""The offline review page: one HTML file (``review.html`` beside this module), no network.

Inline script and style only, and a Content-Security-Policy that forbids every request
(:mod:`icl.offline_page`); packets are read from a file the reviewer picks and the grades leave only as a
downloaded JSON file. It works opened straight from disk; :func:`make_server` serves it on 127.0.0.1 for
machines that prefer a URL.
"""

from __future__ import annotations

import http.server
from pathlib import Path

from icl import offline_page

PAGE = Path(__file__).with_name("review.html")


def page_bytes() -> bytes:
    """Return the review page as UTF-8 bytes."""
    return offline_page.page_bytes("icl.review", "review.html")


def make_server(port: int = 0) -> http.server.ThreadingHTTPServer:
    """Bind the page server to 127.0.0.1:``port`` (0 picks a free port)."""
    return offline_page.make_server("icl.review", "review.html", port)
