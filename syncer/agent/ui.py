"""The agent's read-only fleet page on its own HTTP listener: ``GET /ui`` (the HTML), its style sheet
and script (``/ui/page.css``, ``/ui/page.js``, shipped inside the package: no CDN, fonts or other
origin), ``GET /ui/state`` (the picture as JSON) and ``GET /ui/events`` (server-sent events: the
picture again each time it changes, so the page follows a rollout without reloading).

Who may look: a client on the loopback address (the agent binds loopback by default; a
``kubectl port-forward`` arrives there too), or one that sends ``Authorization: Bearer <webhook
secret>``; anyone else gets 401. Every answer carries a Content-Security-Policy that allows only this
origin's script, style and connections, no inline script and no framing. The page changes nothing:
there is no action endpoint.
"""

from __future__ import annotations

import ipaddress
import json
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from importlib import resources
from typing import Any

from syncer.agent.fleet_page import FleetPage
from syncer.agent.http import bearer_ok
from syncer.errors import GuardFailure
from syncer.status.fleet_view import ClusterView, FleetView, cluster_json, frame_json, guards_of

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every answer under ``/ui``."""

_ASSETS = {
    "/ui": ("index.html", "text/html; charset=utf-8"),
    "/ui/": ("index.html", "text/html; charset=utf-8"),
    "/ui/page.css": ("page.css", "text/css; charset=utf-8"),
    "/ui/page.js": ("page.js", "text/javascript; charset=utf-8"),
}

HEARTBEAT = 2.0
"""Seconds between comment lines on an idle event stream (well within each write's ``io_timeout``), so
a closed browser is noticed and its connection freed."""

STREAM_LIFETIME = 300.0
"""Seconds one event stream lasts; the browser's EventSource connects again on its own, so no
connection holds a slot of the listener for ever."""


def _asset(name: str) -> bytes:
    return resources.files("syncer.agent").joinpath("static", name).read_bytes()


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


class PageRoutes:
    """Answers the page's requests from ``page`` for one listener whose webhook secret is
    ``secret`` (also the page's bearer token)."""

    def __init__(self, page: FleetPage, secret: str) -> None:
        self.page = page
        self.secret = secret

    def serves(self, path: str) -> bool:
        return path == "/ui" or path.startswith("/ui/")

    def allowed(self, client: str, authorization: str) -> bool:
        return is_loopback(client) or bearer_ok(self.secret, authorization)

    def answer(self, handler: BaseHTTPRequestHandler, path: str) -> None:
        """Answer ``GET path``, a path this serves."""
        if not self.allowed(str(handler.client_address[0]), handler.headers.get("Authorization", "")):
            self._send(
                handler, HTTPStatus.UNAUTHORIZED, b"loopback or the bearer secret only\n", "text/plain"
            )
            return
        if path in _ASSETS:
            name, content_type = _ASSETS[path]
            self._send(handler, HTTPStatus.OK, _asset(name), content_type)
        elif path == "/ui/state":
            self._send(handler, HTTPStatus.OK, PictureEncoder().encode(self.page.view), "application/json")
        elif path == "/ui/events":
            self._stream(handler)
        else:
            self._send(handler, HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")

    @staticmethod
    def _headers(handler: BaseHTTPRequestHandler, status: HTTPStatus, content_type: str) -> None:
        handler.send_response(status)
        handler.send_header("Connection", "close")  # one request per connection
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Security-Policy", CSP)
        handler.send_header("X-Content-Type-Options", "nosniff")
        handler.send_header("Referrer-Policy", "no-referrer")
        handler.send_header("Cache-Control", "no-store")
        handler.send_header("Connection", "close")

    def _send(
        self, handler: BaseHTTPRequestHandler, status: HTTPStatus, body: bytes, content_type: str
    ) -> None:
        self._headers(handler, status, content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _stream(self, handler: BaseHTTPRequestHandler) -> None:
        """The picture now, then each newer one, until the client leaves, the stream's lifetime ends
        or the page is closed."""
        self._headers(handler, HTTPStatus.OK, "text/event-stream")
        handler.end_headers()
        encoder = PictureEncoder()
        view = self.page.view
        handler.wfile.write(encoder.event(view))
        handler.wfile.flush()
        ends = time.monotonic() + STREAM_LIFETIME
        version = view.version
        while time.monotonic() < ends and not self.page.closed:
            newer = self.page.wait_newer(version, HEARTBEAT)
            if newer is None:
                handler.wfile.write(b": idle\n\n")
            else:
                version = newer.version
                handler.wfile.write(encoder.event(newer))
            handler.wfile.flush()


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode()


class PictureEncoder:
    """The picture as the page's JSON (``to_json``, as bytes), each cluster's part encoded again only
    when its cell is another value than last time (a cell is a new value on every change), so that
    a stream does not encode every cluster of a large fleet again on each event. One per stream."""

    def __init__(self) -> None:
        self._parts: dict[str, tuple[ClusterView, tuple[GuardFailure, ...], bytes]] = {}

    def encode(self, view: FleetView) -> bytes:
        guards = guards_of(view)
        parts = []
        for name, cell in view.clusters.items():
            kept = self._parts.get(name)
            if kept is None or kept[0] is not cell or kept[1] != guards:
                kept = (cell, guards, _dumps(cluster_json(cell, guards)))
                self._parts[name] = kept
            parts.append(kept[2])
        frame = _dumps(frame_json(view))  # an object with keys: "...}" gets the clusters before its end
        return frame[:-1] + b', "clusters": [' + b", ".join(parts) + b"]}"

    def event(self, view: FleetView) -> bytes:
        # One JSON line per event: JSON escapes every newline, so a value cannot end the event early.
        return b"event: fleet\ndata: " + self.encode(view) + b"\n\n"
