"""Serve the single-file annotation page on 127.0.0.1 only.

The page (``annotate.html`` beside this module) is self-contained: inline script and style, no external
resource, and a Content-Security-Policy that forbids every network request. It works the same when opened
straight from the file; the server only saves copying it somewhere.
"""

from __future__ import annotations

import http.server
from importlib import resources

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    "connect-src 'none'; form-action 'none'; base-uri 'none'"
)


def page_bytes() -> bytes:
    """Return the annotation page as UTF-8 bytes."""
    return resources.files("icl.patient").joinpath("annotate.html").read_bytes()


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = "icl-patient-annotate"
    sys_version = ""

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path.split("?", 1)[0] not in ("/", "/annotate.html"):
            self.send_error(404, "only the annotation page is served")
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
        """Keep the terminal quiet: requests are only the page itself."""


def make_server(port: int = 0) -> http.server.ThreadingHTTPServer:
    """Bind the page server to 127.0.0.1:``port`` (0 picks a free port)."""
    return http.server.ThreadingHTTPServer((HOST, port), _Handler)
