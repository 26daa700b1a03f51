"""Tracing is off at no cost without an OTLP endpoint (no OpenTelemetry module imported by the CLI),
on with one; a traced apply's traceparent annotation is neither a change nor drift; log lines inside
a span carry its ids."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys

from syncer.domain import Action
from syncer.domain.applied import TRACEPARENT_ANNOTATION
from syncer.plan import ClusterState, dry_runs_needed, plan_cluster
from syncer.plan.fields import normalized
from tests.unit.plan.test_golden import FIXTURES, load_case

TRACEPARENT = "00-3a0bbf824b7ef9f4ded3ed665c4e72e5-786c471d6d3797ba-01"


def _environment(endpoint: str | None) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    if endpoint is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    return env


def _imported_by(argv: tuple[str, ...], endpoint: str | None, code: str = "") -> list[str]:
    """Every module ``syncer ARGV`` (then ``code``) had imported when it ended, in a fresh interpreter."""
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['syncer', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('syncer', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"{code}\n"
        "print('MODULES', *sorted(sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=_environment(endpoint)
    )
    return done.stdout.rpartition("MODULES ")[2].split()


def _otel(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] == "opentelemetry" or m == "syncer.tracing.otel"]


def test_version_and_an_offline_diff_import_no_opentelemetry_without_an_endpoint() -> None:
    for argv in (("--version",), ("diff", "--offline", "--repo", "examples/repo")):
        assert _otel(_imported_by(argv, None)) == [], argv


def test_a_span_opened_with_an_endpoint_loads_the_sdk_and_without_one_does_not() -> None:
    opened = "from syncer import tracing\nwith tracing.span('probe', root=True):\n    pass\n"
    with socket.socket() as sock:  # a port nothing listens on: the export fails quietly at exit
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with_endpoint = _otel(_imported_by(("--version",), endpoint, opened))
    assert "syncer.tracing.otel" in with_endpoint
    assert "opentelemetry.sdk.trace" in with_endpoint
    assert _otel(_imported_by(("--version",), None, opened)) == []


def test_log_lines_inside_a_span_carry_its_trace_and_span_ids() -> None:
    code = (
        "import logging, sys\n"
        "from syncer import tracing\n"
        "from syncer.controller.logs import configure\n"
        "configure()\n"
        "log = logging.getLogger('syncer.test')\n"
        "log.info('outside')\n"
        "with tracing.span('probe', root=True):\n"
        "    log.info('inside', extra={'reconcile_id': 'r1'})\n"
        "    print('TRACEPARENT', tracing.traceparent())\n"
        "logging.getLogger('apscheduler.executors.default').warning('skipped: maximum number')\n"
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {**_environment(endpoint), "OTEL_BSP_EXPORT_TIMEOUT": "200"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    _, trace_id, span_id, _ = done.stdout.split()[1].split("-")
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    outside, inside, scheduler = lines[:3]
    assert "trace_id" not in outside
    assert (inside["trace_id"], inside["span_id"], inside["reconcile_id"]) == (trace_id, span_id, "r1")
    assert scheduler["logger"] == "apscheduler.executors.default"  # JSON, not a plain-text line


def _traced(state: ClusterState) -> ClusterState:
    """``state`` as a traced apply leaves it: each live object carries a traceparent syncer owns."""
    live = copy.deepcopy(dict(state.live))
    for obj in live.values():
        obj["metadata"].setdefault("annotations", {})[TRACEPARENT_ANNOTATION] = TRACEPARENT
        for entry in obj["metadata"].get("managedFields", []):
            if entry["manager"] == "syncer":
                entry["fieldsV1"]["f:metadata"]["f:annotations"][f"f:{TRACEPARENT_ANNOTATION}"] = {}
    return ClusterState(state.cluster, state.desired, live, state.inventory)


def test_the_traceparent_of_the_last_apply_is_neither_a_change_nor_drift() -> None:
    state, _ = load_case(FIXTURES / "unchanged")
    traced = _traced(state)
    assert dry_runs_needed(traced) == ()
    (change,) = plan_cluster(traced).changes
    assert change.action == Action.UNCHANGED
    (obj,) = traced.live.values()
    assert TRACEPARENT_ANNOTATION not in json.dumps(normalized(obj))


def test_the_agent_logs_plain_text_when_asked_and_json_by_default() -> None:
    code = (
        "import logging, sys\n"
        "from syncer.controller.logs import configure\n"
        "configure(log_format=sys.argv[1])\n"
        "logging.getLogger('syncer.agent').info('applied')\n"
        "logging.getLogger('apscheduler.scheduler').warning('skipped')\n"
    )
    for log_format in ("json", "text"):
        done = subprocess.run(
            [sys.executable, "-c", code, log_format], capture_output=True, text=True, check=True
        )
        lines = done.stderr.splitlines()
        assert len(lines) == 2, lines
        if log_format == "json":
            assert [json.loads(line)["message"] for line in lines] == ["applied", "skipped"]
        else:
            assert lines[0].endswith("INFO syncer.agent: applied")
            assert lines[1].endswith("WARNING apscheduler.scheduler: skipped")
