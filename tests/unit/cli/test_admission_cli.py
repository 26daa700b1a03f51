"""The admission webhook's command-line options: a missing certificate is a clear error, no traceback."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from syncer.cli.controller import controller

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "c",
}


def test_a_missing_certificate_folder_stops_the_controller_with_the_reason(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    missing = tmp_path / "no-certs"
    result = CliRunner().invoke(
        controller,
        [
            f"--kubeconfig={kubeconfig}",
            "--admission-port=1",
            f"--admission-cert-dir={missing}",
            "--metrics-port=0",
        ],
    )
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert logging.getLogger("syncer").propagate  # failed before touching the process's logging
    assert (
        f"cannot serve the admission webhook from {missing} on port 1: [Errno 2] No such file or directory"
        in (result.output)
    )


def test_a_certificate_that_is_not_one_is_refused(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "tls.crt").write_text("not a certificate\n")
    (certs / "tls.key").write_text("not a key\n")
    result = CliRunner().invoke(
        controller,
        [
            f"--kubeconfig={kubeconfig}",
            "--admission-port=1",
            f"--admission-cert-dir={certs}",
            "--metrics-port=0",
        ],
    )
    assert result.exit_code == 1
    assert f"cannot serve the admission webhook from {certs} on port 1:" in result.output
    assert "Traceback" not in result.output


def invoke_within(arguments: list[str], seconds: float = 30) -> Result:
    """``syncer controller`` with ``arguments`` on a thread that may not outlive ``seconds`` (a FIFO
    where a file should be must fail the test, not hang it)."""
    results: list[Result] = []
    starting = threading.Thread(
        target=lambda: results.append(CliRunner().invoke(controller, arguments)), daemon=True
    )
    starting.start()
    starting.join(seconds)
    assert not starting.is_alive(), f"the controller still starts after {seconds} s"
    (result,) = results
    return result


def test_a_certificate_that_is_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    certs = tmp_path / "certs"
    certs.mkdir()
    os.mkfifo(certs / "tls.crt")
    (certs / "tls.key").write_text("not a key\n")

    result = invoke_within(
        [
            f"--kubeconfig={kubeconfig}",
            "--admission-port=1",
            f"--admission-cert-dir={certs}",
            "--metrics-port=0",
        ]
    )

    assert result.exit_code == 1
    assert f"{certs / 'tls.crt'}: not a regular file (a FIFO)" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("kubeconfig", "said"),
    [("pipe", "not a regular file (a FIFO)"), ("huge", "is outside the 64-bit range")],
)
def test_a_kubeconfig_that_is_a_fifo_or_holds_a_5000_digit_integer_is_refused_clearly(
    tmp_path: Path, kubeconfig: str, said: str
) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "huge").write_text(yaml.safe_dump(KUBECONFIG) + "preferences: {x: " + "9" * 5000 + "}\n")

    result = invoke_within([f"--kubeconfig={tmp_path / kubeconfig}", "--metrics-port=0", "--no-leader-elect"])

    assert result.exit_code == 1, result.output
    assert f"cannot read kubeconfig {tmp_path / kubeconfig}:" in result.output
    assert said in result.output
    assert "Traceback" not in result.output


@pytest.fixture
def syncer_logging() -> Iterator[None]:
    """The ``syncer`` logger as it was: the controller command configures the process's logging."""
    logger = logging.getLogger("syncer")
    saved = (list(logger.handlers), logger.propagate, logger.level)
    yield
    logger.handlers[:], logger.propagate = saved[0], saved[1]
    logger.setLevel(saved[2])


@pytest.mark.usefixtures("syncer_logging")
def test_a_metrics_port_already_taken_stops_the_controller_with_the_reason(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(controller, [f"--kubeconfig={kubeconfig}", f"--metrics-port={port}"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"cannot serve /metrics on port {port}" in result.output
    assert "Traceback" not in result.output


@pytest.mark.usefixtures("syncer_logging")
@pytest.mark.parametrize("log_format", ["json", "text"])
def test_the_controller_logs_in_the_format_asked(tmp_path: Path, log_format: str) -> None:
    """``syncer controller --log-format``, like ``syncer run``'s: JSON objects or plain text lines."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(KUBECONFIG))
    with socket.socket() as taken:  # the command stops right after it set its logging up
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        arguments = [f"--kubeconfig={kubeconfig}", f"--metrics-port={port}", f"--log-format={log_format}"]
        result = CliRunner().invoke(controller, arguments)
    assert result.exit_code == 1, result.output
    (handler,) = logging.getLogger("syncer").handlers
    record = logging.LogRecord("syncer.controller", logging.INFO, "", 0, "reconciled", (), None)
    line = handler.format(record)
    if log_format == "json":
        assert json.loads(line)["message"] == "reconciled"
    else:
        assert line.endswith(" INFO syncer.controller: reconciled"), line


def test_the_controller_refuses_an_unknown_log_format() -> None:
    result = CliRunner().invoke(controller, ["--log-format=yaml"])
    assert result.exit_code == 2
    assert "'yaml' is not one of 'json', 'text'" in result.output
