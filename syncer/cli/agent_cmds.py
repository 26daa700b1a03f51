"""``syncer run``, ``syncer sync --once`` and ``syncer status``: the agent, one pass of it, and the
fleet's sync state as the clusters record it."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from syncer.agent.loop import AgentProcess, start_controllers
from syncer.agent.service import Agent
from syncer.agent.settings import AgentSettings, ControllerSettings, HttpSettings, LeaseSettings
from syncer.cli.controller import admission_options, serve_admission, stop_admission
from syncer.config import load_agent_config
from syncer.config.rollout import parse_duration
from syncer.controller.logs import configure as configure_logs
from syncer.engine.revision import Outcome
from syncer.engine.sync import Progress, SyncOutcome
from syncer.errors import SyncerError
from syncer.kube import ClusterClient
from syncer.status.metrics import SyncerMetrics
from syncer.status.state_store import StateStore

EXIT_OK, EXIT_NOT_SYNCED, EXIT_ERROR = 0, 1, 2
F = TypeVar("F", bound=Callable[..., Any])


def _duration(_: click.Context, __: click.Parameter, value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err


def common(func: F) -> F:
    """Options shared by the agent commands."""
    options = [
        click.option(
            "--config",
            "config_path",
            required=True,
            type=click.Path(path_type=Path, dir_okay=False, exists=True),
            help="The agent config file (source, trust policy, clusters).",
        ),
        click.option(
            "--rollout-policy",
            type=click.Path(path_type=Path, dir_okay=False, exists=True),
            default=None,
            help="Rollout policy file (waves and gates) [default: one wave, no bake].",
        ),
        click.option(
            "--kubeconfig",
            default="",
            envvar="KUBECONFIG",
            help="Kubeconfig for clusters the config does not map [default: $KUBECONFIG].",
        ),
        click.option(
            "--state-namespace",
            default="syncer-system",
            show_default=True,
            help="Namespace of each cluster's sync-state ConfigMap.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


class _ConfigProblem(click.ClickException):
    """A config or policy file that cannot be used: exit 2, like every other error."""

    exit_code = EXIT_ERROR


def _load(config_path: Path) -> Any:
    try:
        return load_agent_config(config_path)
    except SyncerError as err:
        raise _ConfigProblem(str(err)) from err


def _lease_settings(opts: dict[str, Any]) -> LeaseSettings:
    duration, deadline, retry = (
        opts["lease_duration"],
        opts["lease_renew_deadline"],
        opts["lease_retry_period"],
    )
    if duration < 1:
        raise click.BadParameter("must be at least 1s", param_hint="--lease-duration")
    if not 0 < deadline < duration:
        raise click.BadParameter(
            "must be above 0 and less than --lease-duration", param_hint="--lease-renew-deadline"
        )
    if not 0 < retry < deadline:
        raise click.BadParameter(
            "must be above 0 and less than --lease-renew-deadline", param_hint="--lease-retry-period"
        )
    return LeaseSettings(
        enabled=opts["leader_elect"],
        namespace=opts["lease_namespace"],
        context=opts["lease_context"],
        duration=duration,
        renew_deadline=deadline,
        retry_period=retry,
    )


def _http_settings(opts: dict[str, Any]) -> HttpSettings:
    timeout = opts["http_request_timeout"]
    if timeout <= 0:
        raise click.BadParameter("must be above 0", param_hint="--http-request-timeout")
    return HttpSettings(
        host=opts["http_host"],
        port=opts["http_port"],
        request_timeout=timeout,
        io_timeout=min(5.0, timeout),
        max_connections=opts["http_max_connections"],
    )


@click.command()
@common
@click.option(
    "--interval", default="1m", show_default=True, callback=_duration, help="How often to poll git."
)
@click.option(
    "--jitter", default="5s", show_default=True, callback=_duration, help="Random delay added to polls."
)
@click.option(
    "--drift-interval", default="5m", show_default=True, callback=_duration, help="How often to repair drift."
)
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port of /metrics, /healthz, /readyz, /hooks/git (0: any free port).",
)
@click.option(
    "--http-host",
    default="127.0.0.1",
    show_default=True,
    help="Address the HTTP server binds (0.0.0.0 or :: for every address, as in a pod).",
)
@click.option(
    "--http-max-connections",
    type=click.IntRange(1, 10000),
    default=32,
    show_default=True,
    help="Connections served at once; more are answered 503.",
)
@click.option(
    "--http-request-timeout",
    default="10s",
    show_default=True,
    callback=_duration,
    help="Time a client has to send a whole request (line, headers and body).",
)
@click.option(
    "--hook-secret-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File with the git webhook's shared secret (no webhook without it).",
)
@click.option(
    "--leader-elect/--no-leader-elect", default=True, show_default=True, help="Hold a Lease before acting."
)
@click.option("--lease-namespace", default="syncer-system", show_default=True)
@click.option(
    "--lease-context", default="", help="Context of the home cluster holding the Lease [default: current]."
)
@click.option(
    "--lease-duration",
    default="15s",
    show_default=True,
    callback=_duration,
    help="How long a Lease not renewed stays held: how soon another replica may take over.",
)
@click.option(
    "--lease-renew-deadline",
    default="10s",
    show_default=True,
    callback=_duration,
    help="How long the leader keeps acting when it cannot renew the Lease (less than the duration).",
)
@click.option(
    "--lease-retry-period",
    default="2s",
    show_default=True,
    callback=_duration,
    help="How often the Lease is renewed or, by a standby, tried (less than the renew deadline).",
)
@click.option(
    "--controller/--no-controller",
    default=False,
    show_default=True,
    help="Run the embedded RedisCluster controller.",
)
@click.option(
    "--controller-every-cluster",
    is_flag=True,
    help="Run one embedded controller per cluster of the config (local fleets).",
)
@click.option("--watch-namespace", default="", help="Limit the embedded controller to one namespace.")
@click.option(
    "--topology/--no-topology",
    default=False,
    show_default=True,
    help="Form Redis Cluster topology (not on kwok nodes).",
)
@click.option("--workers", default=2, show_default=True, help="Reconcile workers of the embedded controller.")
@admission_options
def run(**opts: Any) -> None:
    """Run the agent: poll git, verify, roll out in waves, repair drift, serve metrics."""
    lease = _lease_settings(opts)
    http = _http_settings(opts)
    config = _load(opts["config_path"])
    # The webhook's certificate is one of the files to check before the process's logging is set up.
    home = lease.kubeconfig or opts["kubeconfig"], lease.context
    admission = serve_admission(*home, opts["admission_port"], opts["admission_cert_dir"])
    configure_logs()  # only once the arguments and files are known to be good
    settings = AgentSettings(
        config=opts["config_path"],
        rollout_policy=opts["rollout_policy"],
        kubeconfig=opts["kubeconfig"],
        interval=opts["interval"],
        jitter=opts["jitter"],
        drift_interval=opts["drift_interval"],
        state_namespace=opts["state_namespace"],
        http=http,
        hook_secret_file=opts["hook_secret_file"],
        lease=lease,
        controller=ControllerSettings(
            enabled=opts["controller"] or opts["controller_every_cluster"],
            every_cluster=opts["controller_every_cluster"],
            watch_namespace=opts["watch_namespace"],
            workers=opts["workers"],
            topology=opts["topology"],
        ),
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        agent = Agent(config, settings, SyncerMetrics(), stop)
        AgentProcess(agent, settings, stop).run()
    except SyncerError as err:
        logging.getLogger("syncer.agent").error("%s", err)
        sys.exit(EXIT_ERROR)
    finally:
        stop_admission(admission)


def _printer(console: Console) -> Callable[[Progress], None]:
    marks = {
        "applying": "…",
        "applied": "✓",
        "apply-failed": "✗",
        "already-applied": "=",
        "gate-proceed": "✓",
        "gate-halt": "✗",
        "gate-rollback": "✗",
        "rolling-back": "↺",
        "gate-wait": "·",
    }
    last: dict[str, str] = {}

    def show(step: Progress) -> None:
        # Say each kind of wait once: "baking: 8s of 10s left" and "baking: 6s ..." are one wait.
        kind = step.detail.split(":", 1)[0] if step.step == "gate-wait" else f"{step.step}{step.detail}"
        if step.step == "gate-wait" and last.get(step.wave) == kind:
            return
        last[step.wave] = kind
        where = f"[bold]{step.wave}[/bold]" + (f" / {step.cluster}" if step.cluster else "")
        detail = f": {step.detail}" if step.detail else ""
        console.print(f"{marks.get(step.step, '-')} {where} {step.step}{detail}", highlight=False)

    return show


@click.command()
@common
@click.option("--once", is_flag=True, required=True, help="One pass: poll, verify, roll out, and exit.")
@click.option(
    "--controller-every-cluster",
    is_flag=True,
    help="Run an embedded controller per cluster during the pass (local fleets without their own).",
)
def sync(
    *,
    config_path: Path,
    rollout_policy: Path | None,
    kubeconfig: str,
    state_namespace: str,
    once: bool,
    controller_every_cluster: bool,
) -> None:
    """Take the branch tip through verification and roll it out, showing each wave and cluster.

    Exit codes: 0 synced (or nothing to do), 1 rejected, halted or rolled back, 2 error.
    """
    console = Console(stderr=True)
    config = _load(config_path)
    settings = AgentSettings(
        config=config_path,
        rollout_policy=rollout_policy,
        kubeconfig=kubeconfig,
        state_namespace=state_namespace,
        health_poll=2.0,
        controller=ControllerSettings(enabled=controller_every_cluster, every_cluster=True),
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        agent = Agent(config, settings, SyncerMetrics(), stop, listener=_printer(console))
    except SyncerError as err:
        raise _ConfigProblem(str(err)) from err
    controllers = start_controllers(agent, settings, stop)
    try:
        result = agent.sync_once()
    except SyncerError as err:
        console.print(f"[red]error:[/red] {err}", highlight=False)
        sys.exit(EXIT_ERROR)
    finally:
        stop.set()
        for thread in controllers:
            thread.join(timeout=70)
        agent.close()
    advance = result.advance
    if advance.rejection is not None:
        console.print(f"[red]rejected:[/red] {advance.rejection.message}", highlight=False)
        if advance.outcome is Outcome.REJECTED and advance.current is None:
            sys.exit(EXIT_NOT_SYNCED)
    report = result.report
    if report is None:
        sys.exit(EXIT_NOT_SYNCED)
    for cluster, error in report.unsaved:
        console.print(
            f"[red]sync state not written[/red] on {cluster}: {error} (the next pass cannot resume there)",
            highlight=False,
        )
    good = report.outcome in {SyncOutcome.APPLIED, SyncOutcome.UNCHANGED} and not report.unsaved
    colour = "green" if good else "red"
    console.print(
        f"[{colour}]{report.outcome}[/{colour}] {report.revision[:12]}"
        + (f": {report.message}" if report.message else ""),
        highlight=False,
    )
    sys.exit(EXIT_OK if good and advance.rejection is None else EXIT_NOT_SYNCED)


@click.command()
@click.option(
    "--config", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True)
)
@click.option("--kubeconfig", default="", envvar="KUBECONFIG")
@click.option("--state-namespace", default="syncer-system", show_default=True)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def status(config_path: Path, kubeconfig: str, state_namespace: str, output: str) -> None:
    """Each cluster's sync state: wave, applied revision, health, last good revision, last error."""
    config = _load(config_path)
    rows: list[dict[str, Any]] = []
    for name, access in sorted(config.clusters.items()):
        row: dict[str, Any] = {"cluster": name}
        try:
            client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, name)
            try:
                loaded = StateStore(client, state_namespace).load()
            finally:
                client.close()
            state = loaded.state
            row.update(
                wave=state.wave,
                revision=state.revision,
                phase=str(state.phase),
                health=state.health,
                lastGood=state.last_good,
                lastError=state.last_error or loaded.problem,
                badRevisions=list(state.bad_revisions),
                updatedAt=state.updated_at,
            )
        except SyncerError as err:
            row.update(error=str(err))
        rows.append(row)
    if output == "json":
        click.echo(json.dumps({"apiVersion": "syncer.dev/status/v1", "clusters": rows}, indent=2))
        return
    table = Table(title="fleet sync state", title_justify="left")
    for column in ("cluster", "wave", "revision", "phase", "health", "last good"):
        table.add_column(column, no_wrap=True)
    table.add_column("last error", overflow="fold")
    for row in rows:
        table.add_row(
            row["cluster"],
            row.get("wave", ""),
            row.get("revision", "")[:12],
            row.get("phase", ""),
            row.get("health", ""),
            row.get("lastGood", "")[:12],
            row.get("lastError") or row.get("error", ""),
        )
    Console().print(table)
