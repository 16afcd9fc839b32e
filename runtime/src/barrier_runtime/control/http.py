"""The HTTP transport of the control API: stdlib ``ThreadingHTTPServer``, JSON everywhere.

This module only moves bytes between sockets and :class:`~.api.ControlApi`:
it reads the body (bounded), hands over a :class:`~.api.Request`, writes the
:class:`~.api.Response`. Each request runs on its own daemon thread, so a
long ``POST /v1/stop`` never blocks probes or scrapes. Access logs go to the
module logger at DEBUG and hold only the request line (never headers, so
never the token).
"""

from __future__ import annotations

import json
import logging
import socket
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from barrier_runtime.control import api

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024


class ControlHTTPServer(ThreadingHTTPServer):
    """Serves one :class:`~.api.ControlApi`; request threads are daemons."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], control_api: api.ControlApi) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.control_api = control_api
        super().__init__(address, ControlRequestHandler)


class ControlRequestHandler(BaseHTTPRequestHandler):
    server: ControlHTTPServer
    server_version = "cjob-control/1"
    timeout = 30.0
    """Seconds a client may take to send its request."""

    def version_string(self) -> str:
        return self.server_version

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def do_OPTIONS(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def _serve(self) -> None:
        try:
            body = self._read_body()
        except api.ApiError as refused:
            self.close_connection = True
            self._send(refused.response())
            return
        request = api.Request(
            method=self.command,
            path=urllib.parse.urlsplit(self.path).path,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        self._send(self.server.control_api.handle(request))

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise api.ApiError(411, "send the request body with a Content-Length", reason="length")
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        try:
            length = int(raw)
        except ValueError:
            raise api.ApiError(400, f"bad Content-Length {raw!r}", reason="bad-request") from None
        if length < 0:
            raise api.ApiError(400, f"bad Content-Length {raw!r}", reason="bad-request")
        if length > MAX_BODY_BYTES:
            raise api.ApiError(413, f"request body over {MAX_BODY_BYTES} bytes", reason="too-large")
        return self.rfile.read(length)

    def _send(self, response: api.Response) -> None:
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Cache-Control", "no-store")
            for name, value in response.headers:
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            log.debug("control API: client went away before the %d answer", response.status)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol errors (bad request line, oversized headers) answered as JSON too."""
        status = HTTPStatus(code)
        self.close_connection = True
        doc = {"error": message or status.phrase, "reason": "bad-request"}
        self._send(api.Response(code, json.dumps(doc).encode("utf-8") + b"\n"))

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("control API: %s %s", self.address_string(), format % args)
