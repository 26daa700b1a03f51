"""The agent's HTTP server under hostile clients, on real sockets: callers without the secret are
answered from their headers alone, lengths that cannot be trusted are refused before any body is
read, slow clients are cut off at the request deadline, a flood of connections is bounded and the
server serves again once it passes, and fuzzed requests never fire the webhook or end in a traceback.
The last test runs the same abuse against a real ``syncer run`` process."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import random
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from syncer.agent.http import POLL_STARTS, AgentServer, Endpoints, HookAnswer
from syncer.config.settings import HttpSettings
from tests.integration.agent.procs import Agents
from tests.integration.verify.kit import bare_remote, write_policy
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

SECRET = "s3cret"
LIMITS = HttpSettings(port=0, max_body=4096, request_timeout=1.5, io_timeout=1.0, max_connections=4)


class Served:
    def __init__(self, settings: HttpSettings) -> None:
        self.hooks = 0
        self.refused: Counter[str] = Counter()
        self._lock = threading.Lock()
        endpoints = Endpoints(
            registry=CollectorRegistry(),
            healthy=lambda: (True, "alive"),
            ready=lambda: (True, "ready"),
            hook_secret=SECRET,
            on_hook=self._hook,
            on_refused=self._refused,
        )
        self.server = AgentServer(endpoints, settings).start()

    def _hook(self) -> HookAnswer:
        with self._lock:
            self.hooks += 1
        return POLL_STARTS

    def _refused(self, reason: str) -> None:
        with self._lock:
            self.refused[reason] += 1

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.port), timeout=5)

    def exchange(self, data: bytes) -> bytes:
        """Send ``data`` (and nothing more) and read the answer until the server closes."""
        with self.connect() as conn:
            conn.sendall(data)
            return read_all(conn)

    def status(self, data: bytes) -> int:
        return status_of(self.exchange(data))


def read_all(conn: socket.socket) -> bytes:
    chunks = []
    with contextlib.suppress(ConnectionResetError):
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_of(answer: bytes) -> int:
    """The status code of an HTTP answer, 0 when the server closed without one."""
    line = answer.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else 0


def hook(headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = ["POST /hooks/git HTTP/1.1", "Host: agent", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def hub(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture
def served() -> Iterator[Served]:
    made = Served(LIMITS)
    try:
        yield made
    finally:
        made.server.stop()


@pytest.mark.parametrize(
    "auth",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": "Basic czNjcmV0"},
        {"X-Hub-Signature-256": "md5=x"},
    ],
    ids=["none", "wrong-bearer", "basic", "not-sha256"],
)
@pytest.mark.parametrize(
    "length", [None, "-1", "1000000000000000", "abc"], ids=["absent", "neg", "huge", "word"]
)
def test_a_caller_without_the_secret_is_answered_from_its_headers_alone(
    served: Served, auth: dict[str, str], length: str | None
) -> None:
    headers = dict(auth)
    if length is not None:
        headers["Content-Length"] = length
    started = time.monotonic()
    # Only the headers are sent: an answer (rather than the deadline closing the connection) proves
    # the server judged the caller without waiting for a body.
    assert served.status(hook(headers)) == 401
    assert time.monotonic() - started < LIMITS.request_timeout
    assert served.hooks == 0
    assert served.refused["unauthorized"] >= 1


@pytest.mark.parametrize(
    ("lengths", "status", "reason"),
    [
        (["-1"], 400, "bad-length"),
        (["+5"], 400, "bad-length"),
        (["1e3"], 400, "bad-length"),
        (["5", "6"], 400, "bad-length"),
        (["0x10"], 400, "bad-length"),
        (["99999999999999999999999"], 400, "bad-length"),
        ([str(LIMITS.max_body + 1)], 413, "too-large"),
        (["1000000000000000"], 413, "too-large"),
    ],
)
def test_lengths_that_cannot_be_trusted_are_refused_before_any_body_is_read(
    served: Served, lengths: list[str], status: int, reason: str
) -> None:
    for auth in ({"Authorization": f"Bearer {SECRET}"}, {"X-Hub-Signature-256": hub(b"{}")}):
        data = "\r\n".join(f"Content-Length: {n}" for n in lengths)
        request = hook(auth).removesuffix(b"\r\n") + data.encode() + b"\r\n\r\n"
        assert served.status(request) == status, (auth, lengths)
    assert served.refused[reason] == 2
    assert served.hooks == 0


def test_a_chunked_body_is_refused_and_a_bearer_hook_without_a_body_is_accepted(served: Served) -> None:
    chunked = hook(
        {"X-Hub-Signature-256": hub(b"{}"), "Transfer-Encoding": "chunked"}, b"2\r\n{}\r\n0\r\n\r\n"
    )
    assert served.status(chunked) == 411
    assert served.hooks == 0
    assert served.status(hook({"Authorization": f"Bearer {SECRET}"})) == 202
    body = b'{"ref": "refs/heads/main"}'
    signed = {"X-Hub-Signature-256": hub(body), "Content-Length": str(len(body))}
    assert served.status(hook(signed, body)) == 202
    assert served.hooks == 2


def test_a_body_streamed_after_a_refused_length_is_never_read(served: Served) -> None:
    with served.connect() as conn:
        conn.sendall(hook({"Authorization": "Bearer wrong", "Content-Length": "-1"}))
        sent, broken = 0, False
        block = b"x" * (1 << 20)
        while sent < 512 << 20 and not broken:
            try:
                conn.sendall(block)
                sent += len(block)
            except OSError:  # the server answered and closed: the kernel refuses the rest
                broken = True
    assert broken
    # What went out before the pipe broke is what the kernel buffers held, not what the server read.
    assert sent < 64 << 20, sent
    assert served.hooks == 0


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_slow_client_is_cut_off_at_the_request_deadline(served: Served, part: str) -> None:
    body = b'{"ref": "refs/heads/main"}'
    request = hook({"X-Hub-Signature-256": hub(body), "Content-Length": str(len(body))}, body)
    head, tail = (request[:20], request[20:]) if part == "headers" else (request[: -len(body)], body)
    with served.connect() as conn:
        conn.sendall(head)
        started = time.monotonic()
        closed_after = None
        for byte in tail:  # one byte every 0.2 s: each read is quick, the whole never completes in time
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                closed_after = time.monotonic() - started
                break
            conn.settimeout(0.2)
            try:
                if conn.recv(1) == b"":
                    closed_after = time.monotonic() - started
                    break
            except TimeoutError:
                pass
    assert closed_after is not None, "the server waited for the whole trickle"
    assert closed_after < LIMITS.request_timeout + 1.0
    assert served.hooks == 0
    assert served.refused["timeout"] >= 1
    assert served.status(b"GET /healthz HTTP/1.1\r\n\r\n") == 200


def test_a_flood_of_idle_connections_is_bounded_and_the_server_serves_once_it_passes(served: Served) -> None:
    baseline = threading.active_count()
    idle = [served.connect() for _ in range(LIMITS.max_connections)]
    time.sleep(0.2)
    try:
        extra = [served.connect() for _ in range(16)]
        answers = []
        for conn in extra:
            answers.append(status_of(read_all(conn)))
            conn.close()
        # A handler and its deadline timer per served connection, nothing for the refused ones.
        assert threading.active_count() - baseline <= 2 * LIMITS.max_connections
        assert answers == [503] * 16
        assert served.refused["busy"] == 16
        # The idle ones are cut off at the deadline and their slots come back.
        for conn in idle:
            assert read_all(conn) == b""
    finally:
        for conn in idle:
            conn.close()
    assert served.refused["timeout"] >= LIMITS.max_connections
    assert served.status(b"GET /healthz HTTP/1.1\r\n\r\n") == 200
    eventually("the handler threads to end", lambda: threading.active_count() <= baseline, 5)


GARBAGE = [
    b"\x00\xff\xfe\r\n\r\n",
    b"GET / HTTP/9.9\r\n\r\n",
    b"POST /hooks/git HTTP/1.1\r\n" + b"X-Long: " + b"a" * 70000 + b"\r\n\r\n",
    b"POST /hooks/git HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(150)) + b"\r\n",
    b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
    b"BREW /hooks/git HTTP/1.1\r\n\r\n",
    b"POST /hooks/git\r\n\r\n",
    b"\r\n\r\n",
]


def test_fuzzed_requests_never_fire_the_hook_or_end_in_a_traceback(
    served: Served, capfd: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(20261202)
    statuses: Counter[int] = Counter()
    for request in GARBAGE:
        statuses[served.status(request)] += 1
    for _ in range(100):
        body = rng.randbytes(rng.randint(0, 64))
        headers: dict[str, str] = {}
        choice = rng.randint(0, 5)
        if choice == 0:
            headers["Authorization"] = "Bearer " + rng.choice(["", SECRET[:-1], SECRET + " ", SECRET.upper()])
        elif choice == 1:
            headers["X-Hub-Signature-256"] = hub(body, secret=rng.choice(["", "other", SECRET + "x"]))
        elif choice == 2:
            headers["X-Hub-Signature-256"] = hub(body + b"!")
        elif choice == 3:
            headers["X-Hub-Signature-256"] = "sha256=" + rng.randbytes(rng.randint(0, 40)).hex()
        if rng.random() < 0.8:
            headers["Content-Length"] = rng.choice(
                [str(len(body)), str(-rng.randint(1, 9)), str(len(body) + 1)]
            )
        if choice == 5:
            headers["Transfer-Encoding"] = rng.choice(["chunked", "gzip, chunked", "identity"])
        statuses[served.status(hook(headers, body))] += 1
    assert served.hooks == 0
    assert set(statuses) <= {0, 400, 401, 404, 411, 413, 414, 431, 501, 505}, statuses
    assert served.status(b"GET /healthz HTTP/1.1\r\n\r\n") == 200
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err


def _listening_address(pid: int, port: int) -> str:
    """The local address of the process's listening TCP socket on ``port`` (from /proc)."""
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":
                if table == "tcp":
                    return socket.inet_ntoa(bytes.fromhex(address)[::-1])
                return address
    return ""


def test_syncer_run_binds_loopback_by_default_and_holds_its_limits(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")  # empty: the agent has nothing to roll out
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    config = {
        "source": {"url": str(remote), "cacheDir": str(tmp_path / "cache")},
        "trustPolicy": "trust.yaml",
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    agents = Agents(tmp_path)
    args = [
        "--config",
        str(tmp_path / "agent.yaml"),
        "--no-leader-elect",
        "--http-port",
        "0",
        "--probe-port",
        "0",
        "--http-max-connections",
        "2",
        "--http-request-timeout",
        "1s",
    ]
    try:
        proc = agents.start("agent", args)
        with agents.shown_on_failure():
            port = proc.port()
            assert _listening_address(proc.pid, port) == "127.0.0.1"
            idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
            time.sleep(0.2)
            busy = []
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                    busy.append(status_of(read_all(conn)))
            assert busy == [503, 503, 503]
            for conn in idle:
                assert read_all(conn) == b""
                conn.close()
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                conn.sendall(hook({"Content-Length": "-1"}))
                assert status_of(read_all(conn)) == 401
            metrics = eventually("the server to serve again", lambda: proc.get("/metrics")[0] == 200, 5)
            assert metrics
            samples = proc.metrics()
            assert samples['syncer_http_refused_total{reason="busy"}'] == 3
            assert samples['syncer_http_refused_total{reason="timeout"}'] >= 2
            assert samples['syncer_http_refused_total{reason="unauthorized"}'] == 1
            assert proc.popen.poll() is None
    finally:
        agents.close()
    assert "Traceback" not in proc.stderr_path.read_text()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.popen.wait(timeout=1)
