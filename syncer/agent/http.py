"""The agent's HTTP endpoints: /metrics, /healthz, /readyz and the git webhook ``POST /hooks/git``.

The webhook takes a shared secret, either as ``Authorization: Bearer <secret>`` or as a GitHub/Gitea
style ``X-Hub-Signature-256: sha256=<hmac of the body>``; anything else gets 401 and nothing happens.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, exposition

MAX_HOOK_BODY = 1 << 20


@dataclass(frozen=True)
class Endpoints:
    """What the server answers with: the metrics registry, liveness and readiness checks (each
    returns ``(ok, detail)``), the webhook secret and what to call when a valid hook arrives."""

    registry: CollectorRegistry
    healthy: Callable[[], tuple[bool, str]]
    ready: Callable[[], tuple[bool, str]]
    hook_secret: str = ""
    on_hook: Callable[[], None] = lambda: None


def signature_ok(secret: str, body: bytes, authorization: str, hub_signature: str) -> bool:
    """True when the request proves it knows ``secret`` (an empty secret accepts nothing)."""
    if not secret:
        return False
    if authorization.startswith("Bearer "):
        return hmac.compare_digest(authorization.removeprefix("Bearer ").encode(), secret.encode())
    if hub_signature.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(hub_signature.removeprefix("sha256="), expected)
    return False


def _handler(endpoints: Endpoints) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "syncer"

        def log_message(self, format: str, *args: object) -> None:
            """Access logs stay off; the agent logs what it does, not every scrape."""

        def _send(
            self, status: HTTPStatus, body: bytes, content_type: str = "text/plain; charset=utf-8"
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _check(self, probe: Callable[[], tuple[bool, str]]) -> None:
            ok, detail = probe()
            status = HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE
            self._send(status, (detail or ("ok" if ok else "not ok")).encode() + b"\n")

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                encoder, content_type = exposition.choose_encoder(self.headers.get("Accept", ""))
                self._send(HTTPStatus.OK, encoder(endpoints.registry), content_type)
            elif path == "/healthz":
                self._check(endpoints.healthy)
            elif path == "/readyz":
                self._check(endpoints.ready)
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n")

        def do_POST(self) -> None:
            if self.path.split("?", 1)[0] != "/hooks/git":
                self._send(HTTPStatus.NOT_FOUND, b"not found\n")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_HOOK_BODY:
                self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"body too large\n")
                return
            body = self.rfile.read(length)
            if not signature_ok(
                endpoints.hook_secret,
                body,
                self.headers.get("Authorization", ""),
                self.headers.get("X-Hub-Signature-256", ""),
            ):
                self._send(HTTPStatus.UNAUTHORIZED, b"bad or missing secret\n")
                return
            endpoints.on_hook()
            self._send(HTTPStatus.ACCEPTED, b"poll scheduled\n")

    return Handler


class AgentServer:
    """The HTTP server in a background thread; ``port=0`` picks a free port (see ``.port``)."""

    def __init__(self, endpoints: Endpoints, host: str = "0.0.0.0", port: int = 8080) -> None:
        self._server = ThreadingHTTPServer((host, port), _handler(endpoints))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="syncer-http", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> AgentServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
