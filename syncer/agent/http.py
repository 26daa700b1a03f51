"""The agent's HTTP endpoints: /metrics, /healthz, /readyz, the git webhook ``POST /hooks/git`` and
the read-only fleet page under ``/ui`` (``syncer.agent.ui``) on one listener (``AgentServer``), and
/healthz and /readyz again on a probe listener of their own (``ProbeServer``) for the kubelet.

The webhook takes a shared secret, either as ``Authorization: Bearer <secret>`` or as a GitHub/Gitea
style ``X-Hub-Signature-256: sha256=<hmac of the body>``; anything else gets 401 and nothing happens.

No client can hold the server: a request is judged on its headers before any of its body is read (a
wrong or missing secret, a missing, malformed or too large length are answered at once), the whole
request must arrive within ``request_timeout`` and each read or write within ``io_timeout``, and at
most ``max_connections`` are served at once (more get 503), of which at most ``max_per_client``
from one client address (more get 429). What is refused is counted by reason (``on_refused``);
nothing a client sends ends in a traceback.

The probe listener answers ``GET /healthz`` and ``GET /readyz`` only, with its own connection and
thread budget and a short request deadline, so no number of slow webhook clients can starve the
probes (and a restart by the liveness probe cannot be forced through the webhook's port).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import re
import socket
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Self

from prometheus_client import CollectorRegistry, exposition

from syncer.config.settings import HttpSettings
from syncer.errors import ConfigError

if TYPE_CHECKING:
    from syncer.agent.ui import PageRoutes

log = logging.getLogger("syncer.agent")

_LENGTH = re.compile(r"^[0-9]{1,18}$")
_HUB_SIGNATURE = re.compile(r"^sha256=[0-9a-fA-F]{64}$")


def _refusal(status: HTTPStatus, body: bytes) -> bytes:
    """A whole answer written at accept time, without a handler thread."""
    head = f"HTTP/1.0 {status.value} {status.phrase}\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"Connection: close\r\n\r\n" + body


_BUSY = _refusal(HTTPStatus.SERVICE_UNAVAILABLE, b"server busy\r\n")
_CLIENT_BUSY = _refusal(HTTPStatus.TOO_MANY_REQUESTS, b"too many connections from this address\n")


@dataclass(frozen=True)
class HookAnswer:
    """What a valid webhook call did, told to its caller as JSON (202 in every case): ``queued`` when
    a pass is running and the poll runs as soon as it ends, with the reason in words."""

    queued: bool
    reason: str

    def body(self) -> bytes:
        return json.dumps({"queued": self.queued, "reason": self.reason}).encode() + b"\n"


POLL_STARTS = HookAnswer(False, "a poll starts now")


@dataclass(frozen=True)
class Endpoints:
    """What the server answers with: the metrics registry, liveness and readiness checks (each
    returns ``(ok, detail)``), the webhook secret, what to call when a valid hook arrives (it says
    what came of it), what to call with a reason when a request or connection is refused, and the
    fleet page's routes (None: no page)."""

    registry: CollectorRegistry
    healthy: Callable[[], tuple[bool, str]]
    ready: Callable[[], tuple[bool, str]]
    hook_secret: str = ""
    on_hook: Callable[[], HookAnswer] = lambda: POLL_STARTS
    on_refused: Callable[[str], None] = lambda reason: None
    page: PageRoutes | None = None


def signature_ok(secret: str, body: bytes, authorization: str, hub_signature: str) -> bool:
    """True when the request proves it knows ``secret`` (an empty secret accepts nothing)."""
    if not secret:
        return False
    if authorization.startswith("Bearer "):
        return bearer_ok(secret, authorization)
    if hub_signature.startswith("sha256="):
        expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(hub_signature.removeprefix("sha256=").lower().encode(), expected.encode())
    return False


def bearer_ok(secret: str, authorization: str) -> bool:
    """True when ``authorization`` is ``Bearer <secret>`` (an empty secret accepts nothing)."""
    if not secret or not authorization.startswith("Bearer "):
        return False
    return hmac.compare_digest(authorization.removeprefix("Bearer ").encode(), secret.encode())


def body_length(content_length: list[str], transfer_encoding: list[str], limit: int) -> tuple[int, str]:
    """The length of a request body from its headers, or ``(-1, reason)`` when it cannot be accepted:
    ``chunked`` (no length given up front), ``bad-length`` (not one plain decimal number, or given
    twice differently) or ``too-large`` (over ``limit``). No header means no body."""
    if transfer_encoding:
        return -1, "chunked"
    if not content_length:
        return 0, ""
    values = {v.strip() for v in content_length}
    if len(values) != 1 or not _LENGTH.match(next(iter(values))):
        return -1, "bad-length"
    length = int(next(iter(values)))
    return (length, "") if length <= limit else (-1, "too-large")


_LENGTH_ANSWERS = {
    "chunked": (HTTPStatus.LENGTH_REQUIRED, b"a Content-Length is required\n"),
    "bad-length": (HTTPStatus.BAD_REQUEST, b"bad Content-Length\n"),
    "too-large": (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"body too large\n"),
}


@dataclass(frozen=True)
class _Limits:
    """What one listener allows: where it binds, connections at once in all and from one address,
    the deadlines of a request, and whether it serves the probes only."""

    host: str
    port: int
    connections: int
    per_client: int
    request_timeout: float
    io_timeout: float
    probes_only: bool = False


def _webhook_limits(settings: HttpSettings) -> _Limits:
    return _Limits(
        settings.host,
        settings.port,
        settings.max_connections,
        settings.max_per_client,
        settings.request_timeout,
        settings.io_timeout,
    )


def _probe_limits(settings: HttpSettings) -> _Limits:
    timeout = settings.probe_timeout
    return _Limits(
        settings.host,
        settings.probe_port,
        settings.probe_connections,
        settings.probe_per_client,
        timeout,
        timeout,
        probes_only=True,
    )


class _Deadline(threading.Timer):
    """A timer that never keeps the process alive (a daemon thread)."""

    def __init__(self, interval: float, function: Callable[[], None]) -> None:
        super().__init__(interval, function)
        self.daemon = True


def _handler(endpoints: Endpoints, settings: HttpSettings, limits: _Limits) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "syncer"
        timeout = limits.io_timeout  # each read and write of the connection
        _deadline: threading.Timer

        def setup(self) -> None:
            super().setup()
            # The whole request must be in within request_timeout: a client trickling bytes is cut off.
            self._deadline = _Deadline(limits.request_timeout, self._expire)
            self._deadline.start()

        def _expire(self) -> None:
            endpoints.on_refused("timeout")
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def finish(self) -> None:
            self._deadline.cancel()
            with contextlib.suppress(OSError):
                super().finish()

        def log_message(self, format: str, *args: object) -> None:
            """Access logs stay off; the agent logs what it does, not every scrape."""

        def log_error(self, format: str, *args: object) -> None:
            # The standard library reports a read or write that took longer than io_timeout here.
            if format.startswith("Request timed out"):
                endpoints.on_refused("timeout")

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # Malformed request lines and headers (answered by the standard library) count as refused.
            endpoints.on_refused("malformed")
            with contextlib.suppress(OSError):
                super().send_error(code, message, explain)

        def _send(
            self, status: HTTPStatus, body: bytes, content_type: str = "text/plain; charset=utf-8"
        ) -> None:
            self._deadline.cancel()
            self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, reason: str, status: HTTPStatus, body: bytes) -> None:
            endpoints.on_refused(reason)
            self._send(status, body)

        def _check(self, probe: Callable[[], tuple[bool, str]]) -> None:
            ok, detail = probe()
            status = HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE
            self._send(status, (detail or ("ok" if ok else "not ok")).encode() + b"\n")

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics" and not limits.probes_only:
                encoder, content_type = exposition.choose_encoder(self.headers.get("Accept", ""))
                self._send(HTTPStatus.OK, encoder(endpoints.registry), content_type)
            elif path == "/healthz":
                self._check(endpoints.healthy)
            elif path == "/readyz":
                self._check(endpoints.ready)
            elif endpoints.page is not None and endpoints.page.serves(path) and not limits.probes_only:
                self._deadline.cancel()  # the request is in; an event stream outlives the deadline
                endpoints.page.answer(self, path)
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n")

        def do_POST(self) -> None:
            if limits.probes_only:
                self._send(HTTPStatus.METHOD_NOT_ALLOWED, b"probes only: GET /healthz or /readyz\n")
                return
            if self.path.split("?", 1)[0] != "/hooks/git":
                self._send(HTTPStatus.NOT_FOUND, b"not found\n")
                return
            secret = endpoints.hook_secret
            authorization = self.headers.get("Authorization", "")
            hub_signature = self.headers.get("X-Hub-Signature-256", "")
            # Judge the headers first: nothing of the body is read for a caller without the secret.
            by_bearer = authorization.startswith("Bearer ")
            if not secret or not (by_bearer or _HUB_SIGNATURE.match(hub_signature)):
                self._refuse("unauthorized", HTTPStatus.UNAUTHORIZED, b"bad or missing secret\n")
                return
            if by_bearer and not bearer_ok(secret, authorization):
                self._refuse("unauthorized", HTTPStatus.UNAUTHORIZED, b"bad or missing secret\n")
                return
            length, problem = body_length(
                self.headers.get_all("Content-Length") or [],
                self.headers.get_all("Transfer-Encoding") or [],
                settings.max_body,
            )
            if problem:
                status, answer = _LENGTH_ANSWERS[problem]
                self._refuse(problem, status, answer)
                return
            body = self.rfile.read(length) if length else b""
            if len(body) != length:
                endpoints.on_refused("timeout")
                self.close_connection = True
                return
            if not signature_ok(secret, body, authorization, hub_signature):
                self._refuse("unauthorized", HTTPStatus.UNAUTHORIZED, b"bad or missing secret\n")
                return
            outcome = endpoints.on_hook()
            self._send(HTTPStatus.ACCEPTED, outcome.body(), "application/json")

    return Handler


class _BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most ``limits.connections`` at once (more are answered 503) and
    at most ``limits.per_client`` from one client address (more are answered 429). A refused
    connection is answered and closed from the accepting thread: it never gets a thread."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # connections waiting to be accepted (and answered, if only with 503)

    def __init__(self, limits: _Limits, handler: type[BaseHTTPRequestHandler], endpoints: Endpoints):
        self.address_family = socket.AF_INET6 if ":" in limits.host else socket.AF_INET
        self._slots = threading.BoundedSemaphore(max(limits.connections, 1))
        self._per_client = max(limits.per_client, 1)
        self._clients: Counter[str] = Counter()
        self._clients_lock = threading.Lock()
        self._endpoints = endpoints
        super().__init__((limits.host, limits.port), handler)

    def _refuse(self, request: Any, reason: str, answer: bytes) -> None:
        self._endpoints.on_refused(reason)
        with contextlib.suppress(OSError):
            request.setblocking(False)
            request.send(answer)
        self.shutdown_request(request)

    def _take(self, client: str) -> str:
        """Take a slot for ``client``: "" when taken, else the reason it is refused."""
        with self._clients_lock:
            if self._clients[client] >= self._per_client:
                return "per-client"
            if not self._slots.acquire(blocking=False):
                return "busy"
            self._clients[client] += 1
        return ""

    def _give_back(self, client: str) -> None:
        with self._clients_lock:
            self._clients[client] -= 1
            if self._clients[client] <= 0:
                del self._clients[client]
            self._slots.release()

    def process_request(self, request: Any, client_address: Any) -> None:
        client = str(client_address[0])
        refused = self._take(client)
        if refused:
            self._refuse(request, refused, _CLIENT_BUSY if refused == "per-client" else _BUSY)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._give_back(client)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._give_back(str(client_address[0]))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that breaks is the client's business: one log line, never a traceback."""
        err = sys.exc_info()[1]
        if not isinstance(err, OSError):
            log.warning("HTTP request from %s failed: %s", client_address[0], err)


class _Served:
    """One listener served by a background thread; port 0 picks a free port (see ``.port``)."""

    def __init__(self, endpoints: Endpoints, settings: HttpSettings, limits: _Limits, name: str) -> None:
        try:
            self._server = _BoundedServer(limits, _handler(endpoints, settings, limits), endpoints)
        except OSError as err:
            where = f"{limits.host} port {limits.port}"
            raise ConfigError(f"cannot listen on {where}: {err.strerror or err}") from err
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)

    @property
    def host(self) -> str:
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()


class AgentServer(_Served):
    """/metrics, /healthz, /readyz and the webhook on ``settings.port``, within the webhook's limits."""

    def __init__(self, endpoints: Endpoints, settings: HttpSettings = HttpSettings()) -> None:
        super().__init__(endpoints, settings, _webhook_limits(settings), "syncer-http")


class ProbeServer(_Served):
    """``GET /healthz`` and ``GET /readyz`` on ``settings.probe_port``, within the probe limits."""

    def __init__(self, endpoints: Endpoints, settings: HttpSettings = HttpSettings()) -> None:
        super().__init__(endpoints, settings, _probe_limits(settings), "syncer-probes")
