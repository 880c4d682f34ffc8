"""Serve one self-contained HTML page of the package on 127.0.0.1, and nothing else.

The pages (the patient annotation page, the expert review page) carry their script and style inline and a
Content-Security-Policy that forbids every request, so they work the same opened straight from disk; the
server only saves copying the file somewhere. It answers GET for the page alone and refuses uploads.
"""

from __future__ import annotations

import http.server
from importlib import resources

HOST = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
    "connect-src 'none'; form-action 'none'; base-uri 'none'"
)


def page_bytes(package: str, filename: str) -> bytes:
    """Return the page ``filename`` shipped in ``package`` as UTF-8 bytes."""
    return resources.files(package).joinpath(filename).read_bytes()


def make_server(package: str, filename: str, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Bind a server of that one page to 127.0.0.1:``port`` (0 picks a free port)."""
    body = page_bytes(package, filename)

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = f"icl-{filename.rsplit('.', 1)[0]}"
        sys_version = ""

        def do_GET(self) -> None:  # noqa: N802 (http.server naming)
            if self.path.split("?", 1)[0] not in ("/", f"/{filename}"):
                self.send_error(404, f"only {filename} is served")
                return
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

    return http.server.ThreadingHTTPServer((HOST, port), Handler)
