from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from click.testing import CliRunner

from syncer.cli import cli
from syncer.controller.logs import ContextLogger, JsonFormatter


def test_lines_are_json_with_the_reconcile_context_and_call_extras() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("syncer.test.logs")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    adapter = ContextLogger(logger, {"reconcile_id": "abc123", "namespace": "ns", "rediscluster": "cache"})
    adapter.info("Ready=%s", "True", extra={"condition": "Ready"})
    entry = json.loads(stream.getvalue())
    assert entry["message"] == "Ready=True"
    assert entry["level"] == "info"
    assert (entry["reconcile_id"], entry["namespace"], entry["rediscluster"]) == ("abc123", "ns", "cache")
    assert entry["condition"] == "Ready"


def test_the_controller_command_is_registered_with_its_options() -> None:
    result = CliRunner().invoke(cli, ["controller", "--help"])
    assert result.exit_code == 0
    for option in ("--watch-namespace", "--leader-elect / --no-leader-elect", "--metrics-port", "--context"):
        assert option in result.output


def test_a_kubeconfig_without_a_current_context_is_a_clear_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["controller", "--kubeconfig", str(kubeconfig), "--metrics-port", "0"])
    assert result.exit_code == 1
    assert "has no current-context; pass --context" in result.output
    assert logging.getLogger("syncer").propagate  # failed before touching the process's logging
