"""``syncer run`` and ``syncer sync --once``: the agent, and one pass of it."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from syncer.agent.loop import agent_process, start_controllers
from syncer.agent.once import OncePass, one_pass
from syncer.cli.controller import admission_options, log_format_option, serve_admission, stop_admission
from syncer.cli.tables import markup_safe
from syncer.config import AgentConfig, load_agent_config
from syncer.config.agent import home_cluster
from syncer.config.loading import check_kubeconfig
from syncer.config.rollout import load_rollout_policy
from syncer.config.settings import (
    AGENT_NAMESPACE,
    DRIFT_INTERVAL,
    HEALTH_POLL,
    HEALTH_POLL_FOREGROUND,
    POLL_INTERVAL,
    POLL_JITTER,
    AgentSettings,
    ControllerSettings,
    HttpSettings,
    LeaseSettings,
    ShardSettings,
)
from syncer.controller.logs import configure as configure_logs
from syncer.domain.durations import format_duration, parse_duration
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.engine.revision import PollOutcome
from syncer.errors import SyncerError
from syncer.rollout.moves import RolloutOutcome
from syncer.status.metrics import SyncerMetrics

EXIT_OK, EXIT_NOT_SYNCED, EXIT_ERROR = 0, 1, 2
F = TypeVar("F", bound=Callable[..., Any])


def _duration(_: click.Context, __: click.Parameter, value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from err


def _duration_option(flag: str, default: float, help: str) -> Callable[[F], F]:
    """An option taking a duration (``30s``, ``5m``), shown with its default."""
    return click.option(
        flag, default=format_duration(default), show_default=True, callback=_duration, help=help
    )


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
            default=AGENT_NAMESPACE,
            show_default=True,
            help="Namespace of each cluster's sync-state ConfigMap.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def lease_options(func: F) -> F:
    """The Lease options of the commands that write to the fleet (``run`` and ``sync --once``)."""
    options = [
        click.option(
            "--leader-elect/--no-leader-elect",
            default=True,
            show_default=True,
            help="Hold the fleet's Lease before writing (every write then carries its fencing token).",
        ),
        click.option("--lease-namespace", default=LeaseSettings.namespace, show_default=True),
        click.option(
            "--lease-context",
            default="",
            help="Context of the home cluster holding the Lease [default: current].",
        ),
        _duration_option(
            "--lease-duration",
            LeaseSettings.duration,
            "How long a Lease not renewed stays held: how soon another replica may take over.",
        ),
        _duration_option(
            "--lease-renew-deadline",
            LeaseSettings.renew_deadline,
            "How long the leader keeps acting when it cannot renew the Lease (less than the duration).",
        ),
        _duration_option(
            "--lease-retry-period",
            LeaseSettings.retry_period,
            "How often the Lease is renewed or, by a standby, tried (less than the renew deadline).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


class _ConfigProblem(click.ClickException):
    """A config or policy file that cannot be used: exit 2, like every other error."""

    exit_code = EXIT_ERROR


def _load(config_path: Path, rollout_policy: Path | None = None, kubeconfig: str = "") -> AgentConfig:
    """The agent config, with the rollout policy of ``rollout_policy`` when one is given, once the
    default ``kubeconfig`` is checked too."""
    try:
        check_kubeconfig(kubeconfig)
        config = load_agent_config(config_path)
        if rollout_policy is not None:
            config = replace(config, rollout=load_rollout_policy(rollout_policy))
    except SyncerError as err:
        raise _ConfigProblem(str(err)) from err
    return config


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
    wait = opts.get("lease_wait", LeaseSettings.acquire_wait)
    return LeaseSettings(
        namespace=opts["lease_namespace"],
        duration=duration,
        renew_deadline=deadline,
        retry_period=retry,
        acquire_wait=wait,
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
        max_per_client=opts["http_max_per_client"],
        probe_port=opts["probe_port"],
    )


@click.command()
@common
@_duration_option("--interval", POLL_INTERVAL, "How often to poll git.")
@_duration_option("--jitter", POLL_JITTER, "Random delay added to polls.")
@_duration_option("--drift-interval", DRIFT_INTERVAL, "How often to repair drift.")
@_duration_option(
    "--health-poll", HEALTH_POLL, "The longest wait between two health checks of a wave waiting on its gate."
)
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=HttpSettings.port,
    show_default=True,
    help="Port of /metrics, /healthz, /readyz, /hooks/git (0: any free port).",
)
@click.option(
    "--http-host",
    default=HttpSettings.host,
    show_default=True,
    help="Address the HTTP server binds (0.0.0.0 or :: for every address, as in a pod).",
)
@click.option(
    "--http-max-connections",
    type=click.IntRange(1, 10000),
    default=HttpSettings.max_connections,
    show_default=True,
    help="Connections served at once; more are answered 503.",
)
@click.option(
    "--http-max-per-client",
    type=click.IntRange(1, 10000),
    default=HttpSettings.max_per_client,
    show_default=True,
    help="Connections one client address may hold at once; more are answered 429.",
)
@click.option(
    "--probe-port",
    type=click.IntRange(0, 65535),
    default=HttpSettings.probe_port,
    show_default=True,
    help="Port of the probe listener (GET /healthz, /readyz), on connections of its own that webhook "
    "clients cannot take; bound to --http-host (0: any free port).",
)
@_duration_option(
    "--http-request-timeout",
    HttpSettings.request_timeout,
    "Time a client has to send a whole request (line, headers and body).",
)
@click.option(
    "--hook-secret-file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="File with the git webhook's shared secret (no webhook without it).",
)
@lease_options
@click.option(
    "--shard-group",
    default="",
    help="Split the config's clusters with the other replicas of this group through Leases; each "
    "replica writes only to the clusters it owns (replaces leader election).",
)
@click.option(
    "--shard-identity",
    default="",
    help="This replica's name in its shard group [default: host name and a random suffix].",
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
@log_format_option
@admission_options
def run(**opts: Any) -> None:
    """Run the agent: poll git, verify, roll out in waves, repair drift, serve metrics."""
    lease = _lease_settings(opts)
    http = _http_settings(opts)
    if opts["health_poll"] <= 0:
        raise click.BadParameter("must be above 0", param_hint="--health-poll")
    config = _load(opts["config_path"], opts["rollout_policy"], opts["kubeconfig"])
    # The webhook's certificate is one of the files to check before the process's logging is set up.
    admission = serve_admission(
        opts["kubeconfig"], opts["lease_context"], opts["admission_port"], opts["admission_cert_dir"]
    )
    configure_logs(log_format=opts["log_format"])  # only once the arguments and files are known to be good
    settings = AgentSettings(
        kubeconfig=opts["kubeconfig"],
        interval=opts["interval"],
        jitter=opts["jitter"],
        drift_interval=opts["drift_interval"],
        health_poll=opts["health_poll"],
        state_namespace=opts["state_namespace"],
        http=http,
        hook_secret_file=opts["hook_secret_file"],
        leader_elect=opts["leader_elect"],
        lease=lease,
        shards=ShardSettings(group=opts["shard_group"], identity=opts["shard_identity"]),
        home=home_cluster(config, opts["kubeconfig"], opts["lease_context"]),
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
        agent_process(config, settings, SyncerMetrics(), stop).run()
    except SyncerError as err:
        logging.getLogger("syncer.agent").error("%s", err)
        sys.exit(EXIT_ERROR)
    finally:
        stop_admission(admission)


def _printer(console: Console) -> Callable[[PassEvent], None]:
    last: dict[str, tuple[str, ...]] = {}

    def show(event: PassEvent) -> None:
        mark = event.treatment.mark
        if not mark:
            return  # shown in the pass's summary
        # Say each wait once: "baking: 8s of 10s left" and "baking: 6s ..." are one wait.
        kind: tuple[str, ...] = (event.step, str(event.waiting or ""))
        if event.waiting is not Waiting.BAKE:
            kind += (event.detail,)
        if event.step is Step.GATE_WAIT and last.get(event.wave) == kind:
            return
        last[event.wave] = kind
        where = f"[bold]{markup_safe(event.wave)}[/bold]" + (
            f" / {markup_safe(event.cluster)}" if event.cluster else ""
        )
        detail = f": {markup_safe(event.detail)}" if event.detail else ""
        console.print(f"{mark} {where} {event.step}{detail}", highlight=False)

    return show


@click.command()
@common
@click.option("--once", is_flag=True, required=True, help="One pass: poll, verify, roll out, and exit.")
@click.option(
    "--controller-every-cluster",
    is_flag=True,
    help="Run an embedded controller per cluster during the pass (local fleets without their own).",
)
@lease_options
@_duration_option(
    "--lease-wait",
    LeaseSettings.acquire_wait,
    "How long to wait for the Lease while a running agent holds it, before giving up.",
)
def sync(**opts: Any) -> None:
    """Take the branch tip through verification and roll it out, showing each wave and cluster.

    The pass holds the fleet's Lease, as a running agent's leader does: while one holds it, the pass
    waits for it (--lease-wait) and then gives up, naming the holder.

    Exit codes: 0 synced (or nothing to do), 1 rejected, halted or rolled back, 2 error.
    """
    console = Console(stderr=True)
    lease = _lease_settings(opts)
    config = _load(opts["config_path"], opts["rollout_policy"], opts["kubeconfig"])
    settings = AgentSettings(
        kubeconfig=opts["kubeconfig"],
        state_namespace=opts["state_namespace"],
        health_poll=HEALTH_POLL_FOREGROUND,
        leader_elect=opts["leader_elect"],
        lease=lease,
        home=home_cluster(config, opts["kubeconfig"], opts["lease_context"]),
        controller=ControllerSettings(enabled=opts["controller_every_cluster"], every_cluster=True),
    )
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        once = OncePass(config, settings, SyncerMetrics(), stop, _printer(console))
    except SyncerError as err:
        raise _ConfigProblem(str(err)) from err
    controllers = start_controllers(once.agent, settings, stop)
    try:
        result = one_pass(once)
    except SyncerError as err:
        console.print(f"[red]error:[/red] {markup_safe(err)}", highlight=False)
        sys.exit(EXIT_ERROR)
    finally:
        stop.set()
        for thread in controllers:
            thread.join(timeout=70)
        once.close()
    advance = result.advance
    if advance.rejection is not None:
        said = "error" if advance.rejection.failed_source else "rejected"
        console.print(f"[red]{said}:[/red] {markup_safe(advance.rejection.message)}", highlight=False)
        if advance.outcome is PollOutcome.REJECTED and advance.current is None:
            sys.exit(EXIT_NOT_SYNCED)
    report = result.report
    if report is None:
        sys.exit(EXIT_NOT_SYNCED)
    for cluster, error in report.unsaved:
        console.print(
            f"[red]sync state not written[/red] on {markup_safe(cluster)}: {markup_safe(error)} "
            "(the next pass cannot resume there)",
            highlight=False,
        )
    good = report.outcome in {RolloutOutcome.APPLIED, RolloutOutcome.UNCHANGED} and not report.unsaved
    colour = "green" if good else "red"
    console.print(
        f"[{colour}]{report.outcome}[/{colour}] {report.revision[:12]}"
        + (f": {markup_safe(report.message)}" if report.message else ""),
        highlight=False,
    )
    sys.exit(EXIT_OK if good and advance.rejection is None else EXIT_NOT_SYNCED)
