"""``syncer controller``: run the RedisCluster controller on its own."""

from __future__ import annotations

import logging
import os
import signal
import ssl
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any

import click
from prometheus_client import CollectorRegistry, start_http_server

from syncer.controller.admission_server import AdmissionOptions, AdmissionServer, start_admission_server
from syncer.controller.logs import LOG_FORMATS, configure
from syncer.controller.model import CONTROLLER_LEASE, ControllerOptions
from syncer.controller.runner import run_controller
from syncer.errors import ConfigError, SyncerError
from syncer.kube import ClusterClient, read_kubeconfig


def _current_context(kubeconfig: str) -> str:
    try:
        document = read_kubeconfig(kubeconfig)
    except ConfigError as err:
        raise click.ClickException(f"cannot read {err}") from err
    context = document.get("current-context")
    if not context:
        raise click.ClickException(f"{kubeconfig} has no current-context; pass --context")
    return str(context)


def admission_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the RedisCluster admission webhook, shared by ``syncer controller`` and ``run``."""
    command = click.option(
        "--admission-cert-dir",
        type=click.Path(path_type=Path),
        default=Path("/etc/syncer/admission"),
        show_default=True,
        help="Folder holding the admission webhook's tls.crt and tls.key.",
    )(command)
    return click.option(
        "--admission-port",
        type=click.IntRange(0, 65535),
        default=0,
        show_default=True,
        help="Serve the RedisCluster admission webhook (HTTPS) on this port; 0: do not.",
    )(command)


def log_format_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--log-format json|text``, shared by ``syncer controller`` and ``run``."""
    return click.option(
        "--log-format",
        type=click.Choice(LOG_FORMATS),
        default="json",
        show_default=True,
        help="Log lines on stderr: JSON objects (with trace_id and span_id inside a span), or plain text.",
    )(command)


@click.command("controller")
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    default=str(Path.home() / ".kube" / "config"),
    show_default="$KUBECONFIG or ~/.kube/config",
    help="Kubeconfig of the cluster to run in.",
)
@click.option("--context", default="", help="Kubeconfig context (default: its current context).")
@click.option("--watch-namespace", default="", help="Reconcile RedisClusters of this namespace only.")
@click.option(
    "--leader-elect/--no-leader-elect", default=True, show_default=True, help="Hold a Lease to lead."
)
@click.option(
    "--lease-namespace",
    default=CONTROLLER_LEASE.namespace,
    show_default=True,
    help="Namespace of the Lease.",
)
@click.option(
    "--lease-duration",
    type=click.FloatRange(1, 3600),
    default=CONTROLLER_LEASE.duration,
    show_default=True,
    help="Seconds a Lease not renewed stays held: how soon another replica may take over.",
)
@click.option(
    "--lease-renew-deadline",
    type=click.FloatRange(0, 3600, min_open=True),
    default=CONTROLLER_LEASE.renew_deadline,
    show_default=True,
    help="Seconds the leader keeps leading while it cannot renew the Lease (less than the duration); "
    "it acts only while the Lease is held for the difference more.",
)
@click.option(
    "--lease-retry-period",
    type=click.FloatRange(0, 3600, min_open=True),
    default=CONTROLLER_LEASE.retry_period,
    show_default=True,
    help="Seconds between renewals, or between a standby's tries (less than the renew deadline).",
)
@click.option(
    "--metrics-port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="0: none."
)
@click.option(
    "--topology/--no-topology", default=False, show_default=True, help="Check and form the Redis cluster."
)
@click.option(
    "--topology-interval",
    type=click.FloatRange(0.1, 3600),
    default=10.0,
    show_default=True,
    help="Seconds between looks at the Redis cluster while Ready.",
)
@click.option(
    "--topology-timeout",
    type=click.FloatRange(0.1, 60),
    default=5.0,
    show_default=True,
    help="Timeout of one command to a Redis server, seconds.",
)
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True)
@log_format_option
@admission_options
def controller(  # click passes every option by name
    *,
    kubeconfig: str,
    context: str,
    watch_namespace: str,
    leader_elect: bool,
    lease_namespace: str,
    lease_duration: float,
    lease_renew_deadline: float,
    lease_retry_period: float,
    metrics_port: int,
    topology: bool,
    topology_interval: float,
    topology_timeout: float,
    workers: int,
    log_format: str,
    admission_port: int,
    admission_cert_dir: Path,
) -> None:
    """Reconcile RedisCluster objects into StatefulSets, Services, ConfigMaps and PDBs.

    Runs until SIGINT or SIGTERM. Logs are JSON lines on stderr (or plain text, --log-format text),
    each reconcile with its own id.
    """
    if not lease_retry_period < lease_renew_deadline < lease_duration:
        raise click.BadParameter(
            "needs --lease-retry-period < --lease-renew-deadline < --lease-duration",
            param_hint="--lease-renew-deadline",
        )
    lease = replace(
        CONTROLLER_LEASE,
        namespace=lease_namespace,
        duration=lease_duration,
        renew_deadline=lease_renew_deadline,
        retry_period=lease_retry_period,
    )
    context = context or _current_context(kubeconfig)
    # The webhook's certificate is one of the files to check before the process's logging is set up.
    admission = serve_admission(kubeconfig, context, admission_port, admission_cert_dir)
    configure(logging.INFO, log_format)
    options = ControllerOptions(
        kubeconfig=kubeconfig,
        context=context,
        watch_namespace=watch_namespace,
        workers=workers,
        topology=topology,
        topology_interval=topology_interval,
        topology_timeout=topology_timeout,
        poll_seconds=min(5.0, topology_interval),
        leader_elect=leader_elect,
        lease=lease,
        identity=f"{os.uname().nodename}-{os.getpid()}",
    )
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    registry = CollectorRegistry()
    server = None
    if metrics_port:
        try:
            server, _ = start_http_server(metrics_port, registry=registry)
        except OSError as err:  # the port is taken, or not ours to bind
            stop_admission(admission)
            raise click.ClickException(f"cannot serve /metrics on port {metrics_port}: {err}") from err
    try:
        run_controller(options, stop, registry)
    except SyncerError as err:
        raise click.ClickException(str(err)) from err
    finally:
        if server is not None:
            server.shutdown()
        stop_admission(admission)


def serve_admission(kubeconfig: str, context: str, port: int, cert_dir: Path) -> AdmissionServer | None:
    """The admission webhook, served by every replica (leader or not) while the controller runs."""
    if not port:
        return None
    try:
        api = ClusterClient.from_kubeconfig(kubeconfig, context)
    except SyncerError as err:
        raise click.ClickException(str(err)) from err
    try:
        server, _ = start_admission_server(api, AdmissionOptions(cert_dir, port))
    except (OSError, ssl.SSLError, SyncerError) as err:
        api.close()
        raise click.ClickException(
            f"cannot serve the admission webhook from {cert_dir} on port {port}: {err}"
        ) from err
    return server


def stop_admission(server: AdmissionServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
        server.close_api()
