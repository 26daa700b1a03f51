"""A real Jaeger beside the local fleet: the pinned ``jaeger`` (v2, built from the Go module proxy by
``devfleet.build.ensure_jaeger``) keeping traces in memory, receiving OTLP over gRPC and HTTP and
serving its query API and UI, each on a free port of 127.0.0.1, stopped with the fleet.

Jaeger v2 is an OpenTelemetry Collector distribution configured by one YAML file: an ``otlp``
receiver, the ``jaeger_storage`` extension with a ``memory`` backend, the ``jaeger_storage_exporter``
writing into it and the ``jaeger_query`` extension reading from it; its own telemetry is off, so that
it opens no port of its own beside these four. The process is recorded among the fleet's processes,
so ``down`` stops it and the leftover check sees it like any other component.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devfleet import build, probe, procs, services
from devfleet.fleet import locked
from devfleet.state import Fleet, Say

NAME = "jaeger"
# How many times Jaeger is started again on new ports when another process took one of them first.
PORT_ATTEMPTS = 3
# Traces kept in memory: plenty for a test run, bounded for a long-lived fleet.
MAX_TRACES = 20000


@dataclass(frozen=True)
class LocalJaeger:
    """A Jaeger of the fleet: where it takes OTLP over HTTP (``otlp_http``, the value of
    ``OTEL_EXPORTER_OTLP_ENDPOINT``) and gRPC (``otlp_grpc``, host:port), and its query URL (API and UI)."""

    otlp_http: str
    otlp_grpc: str
    query: str

    def traces(self, service: str, limit: int = 100, **tags: str) -> list[dict[str, Any]]:
        """The traces holding spans of ``service`` (newest first, as Jaeger's HTTP API gives them),
        optionally only those with a span carrying each of ``tags``; [] when Jaeger does not answer."""
        params: dict[str, str] = {"service": service, "limit": str(limit), "lookback": "1h"}
        if tags:
            params["tags"] = json.dumps(tags)
        url = f"{self.query}/api/traces?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                body = json.load(answer)
        except (OSError, ValueError):
            return []
        data = body.get("data") if isinstance(body, dict) else None
        return data if isinstance(data, list) else []

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        """One trace by its id (32 hex digits), None when Jaeger does not have it."""
        try:
            with urllib.request.urlopen(f"{self.query}/api/traces/{trace_id}", timeout=5) as answer:
                body = json.load(answer)
        except (OSError, ValueError):
            return None
        data = body.get("data") if isinstance(body, dict) else None
        return data[0] if isinstance(data, list) and data else None


@dataclass(frozen=True)
class _Ports:
    otlp_grpc: int
    otlp_http: int
    query_http: int
    query_grpc: int


def _config(ports: _Ports) -> str:
    def at(port: int) -> dict[str, str]:
        return {"endpoint": f"127.0.0.1:{port}"}

    config = {
        "service": {
            "extensions": ["jaeger_storage", "jaeger_query"],
            "pipelines": {
                "traces": {
                    "receivers": ["otlp"],
                    "processors": ["batch"],
                    "exporters": ["jaeger_storage_exporter"],
                }
            },
            "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "warn"}},
        },
        "extensions": {
            "jaeger_storage": {"backends": {"memstore": {"memory": {"max_traces": MAX_TRACES}}}},
            "jaeger_query": {
                "storage": {"traces": "memstore"},
                "http": at(ports.query_http),
                "grpc": at(ports.query_grpc),
            },
        },
        "receivers": {"otlp": {"protocols": {"grpc": at(ports.otlp_grpc), "http": at(ports.otlp_http)}}},
        "processors": {"batch": {"timeout": "200ms"}},
        "exporters": {"jaeger_storage_exporter": {"trace_storage": "memstore"}},
    }
    return yaml.safe_dump(config, sort_keys=False)


def _home(fleet: Fleet) -> Path:
    return fleet.root / NAME


def _handle(fleet: Fleet) -> LocalJaeger:
    ports = json.loads((_home(fleet) / "ports.json").read_text())
    return LocalJaeger(
        f"http://127.0.0.1:{ports['otlp_http']}",
        f"127.0.0.1:{ports['otlp_grpc']}",
        f"http://127.0.0.1:{ports['query_http']}",
    )


def _wait_ready(proc: procs.Proc, local: LocalJaeger, timeout: float) -> None:
    ready = f"{local.query}/api/services"
    probe.wait(f"{NAME} {ready}", lambda: probe.answers_ok(ready, None), time.monotonic() + timeout, proc)


def start(root: Path, say: Say = print, timeout: float = 60.0) -> LocalJaeger:
    """Start the fleet's Jaeger in ``root`` (or return the running one) once its query API answers;
    a recorded one that was stopped is started again on its ports (its traces are gone: memory)."""
    binary = build.ensure_jaeger(say)
    with locked(root):
        fleet = Fleet.load(root)
        if fleet is None:
            raise RuntimeError(f"no fleet at {root}")
        old = services.recorded(fleet, NAME)
        if old is not None:
            if not old.alive():
                services.started_again(fleet, old, lambda p: _wait_ready(p, _handle(fleet), timeout), say)
            return _handle(fleet)
        home = _home(fleet)
        home.mkdir(parents=True, exist_ok=True)

        def spawn(taken: set[int]) -> procs.Proc:
            ports = _Ports(*(probe.free_port(taken) for _ in range(4)))
            (home / "jaeger.yaml").write_text(_config(ports))
            (home / "ports.json").write_text(json.dumps(ports.__dict__))
            argv = [str(binary), f"--config={home / 'jaeger.yaml'}"]
            return procs.spawn(NAME, argv, home / "jaeger.log", home)

        try:
            services.spawned_on_free_ports(
                fleet, spawn, lambda proc: _wait_ready(proc, _handle(fleet), timeout), PORT_ATTEMPTS
            )
        except probe.Exited as exited:
            if "too many open files" in exited.log:
                raise RuntimeError(
                    f"{NAME} could not start: no inotify instance left for it (every "
                    "kube-controller-manager holds 5); raise fs.inotify.max_user_instances "
                    "(scripts/bootstrap sets 1024 when run as root)"
                ) from exited
            raise
        handle = _handle(fleet)
        say(f"{NAME} up: OTLP at {handle.otlp_http} (HTTP), {handle.otlp_grpc} (gRPC); UI {handle.query}")
        return handle


def stop(root: Path, say: Say = print) -> None:
    """Stop the fleet's Jaeger; its record stays, so ``start`` brings it back on the same ports."""
    services.stop(root, NAME, say)
