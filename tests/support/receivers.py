"""Real HTTP receivers for notification tests: a ``ThreadingHTTPServer`` on 127.0.0.1 and a free port,
recording every POST (path, headers, body) and answering as the test says: a status per request in
turn (then 200), or holding each request until the test ends."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    """One request as it arrived, and the status it was answered with."""

    path: str
    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def signed_with(self, key: str) -> bool:
        """Whether ``X-Signature`` is ``sha256=`` and the HMAC-SHA256 of the body under ``key``."""
        expected = "sha256=" + hmac.new(key.encode(), self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers.get("X-Signature", ""), expected)


class Receiver:
    """A test HTTP receiver. ``statuses`` answer the first requests in turn (then 200); with
    ``hang`` every request is held until ``close`` (or 120 s)."""

    def __init__(self, statuses: tuple[int, ...] = (), hang: bool = False) -> None:
        self.statuses = list(statuses)
        self.hang = hang
        self.released = threading.Event()
        self.received: list[Received] = []
        self.arrived = 0  # requests that came, answered or (hanging) not
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with owner._lock:
                    owner.arrived += 1
                if owner.hang:
                    owner.released.wait(120)
                with owner._lock:
                    status = owner.statuses.pop(0) if owner.statuses else 200
                    owner.received.append(Received(self.path, dict(self.headers.items()), body, status))
                # The sender may have given up on a held request long ago.
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def all(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def bodies(self, **match: str) -> list[dict[str, Any]]:
        """The JSON bodies answered 2xx whose fields equal ``match`` (``class`` is ``kind``)."""
        wanted = {("class" if k == "kind" else k): v for k, v in match.items()}
        found = [r.json for r in self.all() if r.status < 300]
        return [b for b in found if all(b.get(k) == v for k, v in wanted.items())]

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


def receivers(*made: Receiver) -> Iterator[Receiver]:
    """Each of ``made``, closed when the generator closes (for fixtures)."""
    try:
        yield from made
    finally:
        for receiver in made:
            receiver.close()
