"""The offline review page: one HTML file (``review.html`` beside this module), no network.

Inline script and style only, and a Content-Security-Policy that forbids every request; packets are read
from a file the reviewer picks and the grades leave only as a downloaded JSON file. It works opened
straight from disk; :func:`make_server` serves it on 127.0.0.1 for machines that prefer a URL.
"""

from __future__ import annotations

import http.server
from importlib import resources
from pathlib import Path

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    "connect-src 'none'; form-action 'none'; base-uri 'none'"
)
PAGE = Path(__file__).with_name("review.html")


def page_bytes() -> bytes:
    """Return the review page as UTF-8 bytes."""
    return resources.files("icl.review").joinpath("review.html").read_bytes()


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "icl-review"
    sys_version = ""

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path.split("?", 1)[0] not in ("/", "/review.html"):
            self.send_error(404, "only the review page is served")
            return
        body = page_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self.send_error(405, "the page never uploads anything")

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        """Keep the terminal quiet."""


def make_server(port: int = 0) -> http.server.ThreadingHTTPServer:
    """Bind the page server to 127.0.0.1:``port`` (0 picks a free port)."""
    return http.server.ThreadingHTTPServer((HOST, port), _Handler)
