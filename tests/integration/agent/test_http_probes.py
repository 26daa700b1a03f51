"""The probes of a real ``syncer run`` process never starve: while hundreds of slow, unauthenticated
connections sit on its webhook port (and some on its probe port), every kubelet-style probe on the
probe listener answers 200 within the kubelet's 1 s timeout, and the webhook still serves an
authenticated client from another address. Loopback only: the abusers come from 127.0.0.1, the
webhook caller from 127.0.0.2 and the probes from 127.0.0.3 (all of 127/8 is this host)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry

from syncer.agent.http import POLL_STARTS, AgentServer, Endpoints, HookAnswer, ProbeServer
from syncer.config.settings import HttpSettings
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.verify.kit import bare_remote, write_policy
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

SECRET = "s3cret"
ABUSER, CALLER, KUBELET = "127.0.0.1", "127.0.0.2", "127.0.0.3"
KUBELET_TIMEOUT = 1.0  # the kubelet's default timeoutSeconds
MAX_OPENS = 4000  # every connection the abuse may open in all, reconnects included
TRICKLE = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 4096  # one byte per tick, never a whole request


@dataclass
class Slow:
    """Up to ``count`` connections to ``port`` from ``ABUSER`` that send one header byte a second and
    never finish a request; a connection the server closes is opened again on the next tick, until
    ``stop`` (or ``MAX_OPENS`` in all)."""

    port: int
    count: int
    stop: threading.Event
    opened: int = 0
    peak: int = 0
    conns: dict[socket.socket, int] = field(default_factory=dict)

    def _open(self) -> None:
        while len(self.conns) < self.count and self.opened < MAX_OPENS and not self.stop.is_set():
            try:
                conn = socket.create_connection(("127.0.0.1", self.port), 1, source_address=(ABUSER, 0))
            except OSError:
                return  # the backlog is full: try again next tick
            conn.setblocking(False)
            self.conns[conn] = 0
            self.opened += 1
        self.peak = max(self.peak, len(self.conns))

    def _tick(self) -> None:
        for conn, sent in list(self.conns.items()):
            try:
                if conn.recv(4096) == b"":
                    raise ConnectionResetError  # answered (429/503) or cut off: closed by the server
            except BlockingIOError:
                pass  # nothing from the server: still held
            except OSError:
                conn.close()
                del self.conns[conn]
                continue
            with contextlib.suppress(OSError):
                conn.send(TRICKLE[sent : sent + 1])
                self.conns[conn] = (sent + 1) % len(TRICKLE)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self._open()
                self._tick()
                self.stop.wait(1.0)
        finally:
            for conn in self.conns:
                conn.close()
            self.conns.clear()


@contextlib.contextmanager
def slow_clients(*targets: tuple[int, int]) -> Iterator[list[Slow]]:
    """Slow connections, ``count`` to each ``port`` of ``targets``, held open for the block."""
    stop = threading.Event()
    abusers = [Slow(port, count, stop) for port, count in targets]
    threads = [threading.Thread(target=a.run, daemon=True) for a in abusers]
    for thread in threads:
        thread.start()
    try:
        yield abusers
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        assert not any(t.is_alive() for t in threads)


def request(port: int, source: str, method: str, path: str, headers: dict[str, str]) -> tuple[int, float]:
    """One request from ``source``; its status and how long the whole answer took."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=KUBELET_TIMEOUT, source_address=(source, 0))
    try:
        conn.request(method, path, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, time.monotonic() - started
    except OSError:
        return 0, time.monotonic() - started
    finally:
        conn.close()


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[AgentProc]:
    remote = bare_remote(tmp_path / "remote.git")  # empty: the agent has nothing to roll out
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    source = {"url": str(remote), "cacheDir": str(tmp_path / "cache")}
    config = {"source": source, "trustPolicy": "trust.yaml"}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "hook-secret").write_text(SECRET)
    args = ["--config", str(tmp_path / "agent.yaml"), "--no-leader-elect", "--interval", "10m"]
    args += ["--http-port", "0", "--probe-port", "0", "--hook-secret-file", str(tmp_path / "hook-secret")]
    agents = Agents(tmp_path)
    try:
        proc = agents.start("agent", args)
        with agents.shown_on_failure():
            yield proc
    finally:
        agents.close()
    assert "Traceback" not in proc.stderr_path.read_text()


def test_probes_answer_within_the_kubelet_timeout_while_hundreds_of_slow_clients_hold_connections(
    agent: AgentProc,
) -> None:
    port, probe_port = agent.port(), agent.probe_port()
    assert request(probe_port, KUBELET, "GET", "/readyz", {})[0] == 200
    probes: list[tuple[str, int, float]] = []
    with slow_clients((port, 280), (probe_port, 40)) as abusers:
        eventually("300 slow connections open", lambda: sum(a.peak for a in abusers) >= 300, 10)
        for i in range(20):  # over 10 s: past the webhook's default request deadline of 10 s
            path = ("/healthz", "/readyz")[i % 2]
            status, took = request(probe_port, KUBELET, "GET", path, {})
            probes.append((path, status, round(took, 3)))
            time.sleep(0.5)
        hook = request(port, CALLER, "POST", "/hooks/git", {"Authorization": f"Bearer {SECRET}"})
        held = sum(len(a.conns) for a in abusers)
    assert sum(a.opened for a in abusers) >= 300
    assert held > 0  # the abuse was still on when the webhook was called
    assert [(p, s) for p, s, _ in probes] == [(p, 200) for p, _, _ in probes], probes
    assert max(t for _, _, t in probes) < KUBELET_TIMEOUT, probes
    assert hook[0] == 202, hook
    # The abusers' address is served again once its connections are gone.
    eventually(
        "the abusers' address served again", lambda: request(port, ABUSER, "GET", "/metrics", {})[0] == 200, 5
    )
    samples = agent.metrics()
    assert samples['syncer_http_refused_total{reason="per-client"}'] >= 300 - 8 - 4
    assert agent.popen.poll() is None


class Hooks:
    def __init__(self) -> None:
        self.called = 0
        self.refused: list[str] = []

    def hook(self) -> HookAnswer:
        self.called += 1
        return POLL_STARTS

    def endpoints(self) -> Endpoints:
        return Endpoints(
            registry=CollectorRegistry(),
            healthy=lambda: (True, "alive"),
            ready=lambda: (True, "ready"),
            hook_secret=SECRET,
            on_hook=self.hook,
            on_refused=self.refused.append,
        )


def answer_of(port: int, source: str) -> int:
    """The status a connection from ``source`` is answered with when it sends nothing (0: none yet)."""
    with socket.create_connection(("127.0.0.1", port), 2, source_address=(source, 0)) as conn:
        conn.settimeout(0.5)
        try:
            line = conn.recv(64).split(b"\r\n", 1)[0].split()
        except TimeoutError:
            return 0  # served: its handler waits for the request
    return int(line[1]) if len(line) > 1 else 0


def test_one_address_gets_at_most_its_share_of_the_webhook_listener_and_others_are_served() -> None:
    hooks = Hooks()
    settings = HttpSettings(port=0, max_connections=4, max_per_client=2, request_timeout=3.0, io_timeout=3.0)
    server = AgentServer(hooks.endpoints(), settings).start()
    try:
        # Accepted in the order they came: the two held ones before any of the next.
        held = [
            socket.create_connection(("127.0.0.1", server.port), 2, source_address=(ABUSER, 0)) for _ in "ab"
        ]
        assert [answer_of(server.port, ABUSER) for _ in range(5)] == [429] * 5
        headers = {"Authorization": f"Bearer {SECRET}"}
        assert request(server.port, CALLER, "POST", "/hooks/git", headers)[0] == 202
        assert hooks.called == 1
        assert hooks.refused == ["per-client"] * 5
        for conn in held:
            conn.close()
    finally:
        server.stop()


def test_the_probe_listener_answers_probes_only() -> None:
    hooks = Hooks()
    server = ProbeServer(hooks.endpoints(), HttpSettings(probe_port=0)).start()
    try:
        assert request(server.port, KUBELET, "GET", "/healthz", {})[0] == 200
        assert request(server.port, KUBELET, "GET", "/readyz", {})[0] == 200
        assert request(server.port, KUBELET, "GET", "/metrics", {})[0] == 404
        assert (
            request(server.port, CALLER, "POST", "/hooks/git", {"Authorization": f"Bearer {SECRET}"})[0]
            == 405
        )
        assert hooks.called == 0
    finally:
        server.stop()


@pytest.mark.parametrize("flag", ["--http-port", "--probe-port"])
def test_a_port_already_taken_is_a_clear_error_not_a_traceback(tmp_path: Path, flag: str) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    write_policy(tmp_path / "trust.yaml", signers=[], keys=[])
    source = {"url": str(remote), "cacheDir": str(tmp_path / "cache")}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump({"source": source, "trustPolicy": "trust.yaml"}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [
            "--config",
            str(tmp_path / "agent.yaml"),
            "--no-leader-elect",
            "--http-port",
            "0",
            "--probe-port",
            "0",
        ]
        args[args.index(flag) + 1] = str(port)
        agents = Agents(tmp_path)
        try:
            proc = agents.start("agent", args)
            assert proc.popen.wait(timeout=60) == 2
        finally:
            agents.close()
    stderr = proc.stderr_path.read_text()
    assert f"cannot listen on 127.0.0.1 port {port}: Address already in use" in stderr
    assert "Traceback" not in stderr
