"""The HTTPS endpoint the apiserver calls for RedisCluster admission (``POST /validate/redisclusters``).

It serves TLS with ``tls.crt``/``tls.key`` from a directory (a mounted Secret, the chart's or the
user's); the certificate files are read again when they change, so a rotated Secret is picked up
without a restart. Each is read only as a regular file within the size of every file of the agent
(``syncer.config.loading.check_agent_file``): a FIFO there never blocks the server. Every replica
serves it, leader or not: admission must not wait for a Lease.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from syncer.config.loading import check_agent_file
from syncer.controller.admission import review_redis_cluster, review_response
from syncer.domain.applied import TRACEPARENT_ANNOTATION
from syncer.errors import ConfigError
from syncer.kube import KubeApi
from syncer.tracing import span

PATH = "/validate/redisclusters"
# An AdmissionReview of a RedisCluster is a few kilobytes; the apiserver's own limit is 3 MiB.
MAX_BODY = 3 * 1024 * 1024
log = logging.getLogger("syncer.controller.admission")


@dataclass(frozen=True)
class AdmissionOptions:
    """Where the webhook listens and where its certificate is (``tls.crt`` and ``tls.key``)."""

    cert_dir: Path
    port: int = 9443
    host: str = "0.0.0.0"


class _Certificates:
    """An SSL context that reloads ``tls.crt``/``tls.key`` when their modification times change."""

    def __init__(self, cert_dir: Path) -> None:
        self.cert = cert_dir / "tls.crt"
        self.key = cert_dir / "tls.key"
        self._lock = threading.Lock()
        self._stamp: tuple[float, float] = (0.0, 0.0)
        self._context = self._load()

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        check_agent_file(self.cert)
        check_agent_file(self.key)
        context.load_cert_chain(self.cert, self.key)
        self._stamp = (self.cert.stat().st_mtime, self.key.stat().st_mtime)
        return context

    def context(self) -> ssl.SSLContext:
        with self._lock:
            try:
                stamp = (self.cert.stat().st_mtime, self.key.stat().st_mtime)
                if stamp != self._stamp:
                    self._context = self._load()
            except (OSError, ssl.SSLError, ConfigError) as err:
                log.warning("keeping the previous webhook certificate: %s", err)
            return self._context


class AdmissionServer(ThreadingHTTPServer):
    """A threading HTTPS server answering AdmissionReviews with ``review_redis_cluster``."""

    daemon_threads = True

    def __init__(self, api: KubeApi, options: AdmissionOptions) -> None:
        self.api = api
        self.certificates = _Certificates(options.cert_dir)
        super().__init__((options.host, options.port), _Handler)

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        return self.certificates.context().wrap_socket(sock, server_side=True), address

    def close_api(self) -> None:
        close = getattr(self.api, "close", None)
        if callable(close):
            close()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: AdmissionServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path.split("?")[0] != PATH:
            self._send(404, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            self._send(413 if length else 400, {"error": "the body must be an AdmissionReview"})
            return
        try:
            review = json.loads(self.rfile.read(length))
        except ValueError:
            self._send(400, {"error": "the body is not JSON"})
            return
        if not isinstance(review, dict) or not isinstance(review.get("request"), dict):
            self._send(400, {"error": "the body is not an AdmissionReview"})
            return
        request = review["request"]
        # Continues the trace of the apply that sent the object, when it carries its traceparent.
        parent, attributes = _traced(request)
        with span("controller.admission.review", attributes, parent, root=not parent) as reviewing:
            verdict = review_redis_cluster(self.server.api, request)
            reviewing.set("syncer.result", "allowed" if verdict.allowed else "denied")
            if not verdict.allowed:
                reviewing.fail(verdict.message)
                log.info("denied: %s", verdict.message)
        self._send(200, review_response(review, verdict))


def _traced(request: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The traceparent the reviewed object carries ("" when none) and the review's span attributes."""
    obj = request.get("object")
    metadata = (obj.get("metadata") if isinstance(obj, dict) else None) or {}
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    parent = annotations.get(TRACEPARENT_ANNOTATION) if isinstance(annotations, dict) else None
    attributes = {
        "k8s.operation": str(request.get("operation", "")),
        "k8s.namespace.name": str(request.get("namespace", "")),
        "syncer.rediscluster": str(request.get("name", "")),
    }
    return (parent if isinstance(parent, str) else ""), attributes


Started = tuple[AdmissionServer, threading.Thread]


def start_admission_server(api: KubeApi, options: AdmissionOptions) -> Started:
    """Start serving in a daemon thread; stop it with ``server.shutdown()`` then ``server.server_close()``."""
    server = AdmissionServer(api, options)
    thread = threading.Thread(target=server.serve_forever, name="admission-webhook", daemon=True)
    thread.start()
    return server, thread
