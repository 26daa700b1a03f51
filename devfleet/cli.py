"""``syncer-fleet``: build, start, inspect and stop a local fleet of real Kubernetes clusters."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import click

from devfleet import access, build, fleet, jaeger, probe, prometheus
from devfleet import cpu as fleet_cpu
from devfleet import memory as fleet_memory


def _say(msg: str) -> None:
    click.echo(msg, err=True)


def _state_option(func: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--state-dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Where the fleet keeps its state [default: ~/.cache/syncer/fleet/default].",
    )(func)


def _root(state_dir: Path | None) -> Path:
    return state_dir or fleet.default_state_dir()


def _loaded(state_dir: Path | None) -> fleet.Fleet:
    loaded = fleet.Fleet.load(_root(state_dir))
    if loaded is None:
        raise click.ClickException(f"no fleet at {_root(state_dir)}; start one with `syncer-fleet up`")
    return loaded


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """A local fleet of real Kubernetes control planes (kube-apiserver, etcd, controller manager,
    scheduler and kwok fake nodes), built from the Go module proxy and cached."""


@cli.command("build")
def build_cmd() -> None:
    """Build (or find in the cache) the pinned binaries and print their directory."""
    click.echo(build.ensure_binaries(_say))


@cli.command("cosign")
def cosign_cmd() -> None:
    """Build (or find in the cache) the pinned cosign, which signs and verifies the image; print its path."""
    click.echo(build.ensure_cosign(_say))


@cli.command()
@_state_option
@click.option("--cluster", "names", multiple=True, help="Cluster names [default: canary, eu-1, us-1].")
@click.option(
    "--clusters",
    "count",
    type=click.IntRange(min=1),
    default=None,
    help="Start this many clusters named <prefix>-01, <prefix>-02, ... (instead of --cluster).",
)
@click.option("--prefix", default="c", show_default=True, help="Name prefix for --clusters.")
@click.option(
    "--profile",
    type=click.Choice([str(p) for p in fleet.Profile]),
    default=str(fleet.Profile.FULL),
    show_default=True,
    help="full: apiserver, controller manager, scheduler, kwok nodes; light: a trimmed apiserver only.",
)
@click.option("--nodes", default=fleet.NODES_PER_CLUSTER, show_default=True, help="kwok nodes per cluster.")
@click.option(
    "--timeout",
    type=float,
    default=None,
    help="Seconds to wait for the fleet [default: 180 + 15 a cluster].",
)
@click.option(
    "--start-window", default=4, show_default=True, help="kube-apiservers starting at the same time."
)
@click.option("--audit", is_flag=True, help="Log every write request to <cluster>/logs/audit.jsonl.")
@click.option("--loopback-pods", is_flag=True, help="Give pods loopback IPs from a /16 no other fleet uses.")
@click.option(
    "--redis",
    is_flag=True,
    help="Run a real redis-server behind every Redis pod and redis_exporter behind its exporter "
    "sidecar, scraped by the fleet's Prometheus (started too) with a cluster label "
    "(implies --loopback-pods).",
)
def up(
    *,
    state_dir: Path | None,
    names: tuple[str, ...],
    count: int | None,
    prefix: str,
    profile: str,
    nodes: int,
    timeout: float | None,
    start_window: int,
    audit: bool,
    loopback_pods: bool,
    redis: bool,
) -> None:
    """Start the fleet and print the path of its kubeconfig (one context per cluster)."""
    if names and count:
        raise click.UsageError("give either --cluster NAME (repeatable) or --clusters N, not both")
    clusters = fleet.cluster_names(count, prefix) if count else names or fleet.DEFAULT_CLUSTERS
    options = fleet.UpOptions(
        clusters=clusters,
        nodes=nodes,
        timeout=timeout,
        profile=fleet.Profile(profile),
        start_window=start_window,
        audit=audit,
        loopback_pods=loopback_pods,
        redis=redis,
    )
    try:
        started = fleet.up(_root(state_dir), options, _say)
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    if redis:
        try:
            prometheus.start(_root(state_dir), _say)
        except (RuntimeError, TimeoutError, probe.Exited) as err:
            raise click.ClickException(_why(err)) from err
    click.echo(started.kubeconfig)


@cli.command()
@_state_option
def down(state_dir: Path | None) -> None:
    """Stop exactly the processes the fleet started and remove its state."""
    if fleet.down(_root(state_dir), _say):
        sys.exit(1)


@cli.command()
@_state_option
def status(state_dir: Path | None) -> None:
    """Show each process of the fleet and whether it runs; exit 1 if any is down."""
    rows = fleet.status(_root(state_dir))
    if not rows:
        click.echo(f"no fleet at {_root(state_dir)}")
        sys.exit(1)
    for cluster, name, pid, alive in rows:
        click.echo(f"{cluster:<12} {name:<24} {pid:>8}  {'running' if alive else 'STOPPED'}")
    if not all(alive for *_, alive in rows):
        sys.exit(1)


@cli.command()
@_state_option
def memory(state_dir: Path | None) -> None:
    """Resident memory of each cluster's processes (RSS, and PSS sharing the binaries' pages), with the
    mean per cluster of each profile."""
    rows = fleet_memory.per_cluster(_loaded(state_dir))
    click.echo(f"{'cluster':<16} {'profile':<8} {'procs':>5} {'RSS MiB':>9} {'PSS MiB':>9}")
    for row in rows:
        click.echo(
            f"{row.cluster:<16} {row.profile:<8} {row.processes:>5} "
            f"{row.rss_kib / 1024:>9.1f} {row.pss_kib / 1024:>9.1f}"
        )
    for summary in fleet_memory.summarize(rows):
        click.echo(
            f"{summary.profile}: {summary.clusters} cluster(s), mean RSS {summary.mean_rss:.1f} MiB "
            f"(max {summary.max_rss:.1f}), mean PSS {summary.mean_pss:.1f} MiB per cluster"
        )
    total = sum(r.pss_kib for r in rows) / 1024
    click.echo(f"whole fleet with etcd: PSS {total:.1f} MiB")


@cli.command()
@_state_option
@click.option(
    "--window",
    type=click.FloatRange(min=1),
    default=30.0,
    show_default=True,
    help="Seconds to measure over.",
)
def cpu(state_dir: Path | None, window: float) -> None:
    """CPU each cluster's processes use over a window, as a share of one core, with the mean per
    cluster of each profile (an idle fleet shows what merely running it costs)."""
    rows = fleet_cpu.per_cluster(_loaded(state_dir), window)
    click.echo(f"{'cluster':<16} {'profile':<8} {'procs':>5} {'% of a core':>12}")
    for row in rows:
        click.echo(f"{row.cluster:<16} {row.profile:<8} {row.processes:>5} {row.core_share * 100:>12.2f}")
    for profile, share in fleet_cpu.mean_by_profile(rows).items():
        click.echo(f"{profile}: mean {share * 100:.2f} % of a core per cluster")
    click.echo(f"whole fleet with etcd: {sum(r.core_share for r in rows) * 100:.2f} % of a core")


def _why(err: Exception) -> str:
    # A KeyError's str() is the repr of its message; show the message itself.
    return str(err.args[0]) if err.args else str(err)


def _component_options(func: click.decorators.FC) -> click.decorators.FC:
    func = click.option(
        "--component",
        type=click.Choice(fleet.CLUSTER_COMPONENTS),
        default="kube-apiserver",
        show_default=True,
    )(func)
    return click.option("--cluster", required=True, help="The cluster whose component it is.")(func)


@cli.command()
@_state_option
@_component_options
def stop(state_dir: Path | None, cluster: str, component: str) -> None:
    """Stop one component of one cluster (the rest of the fleet keeps running); `start` brings it back."""
    try:
        _loaded(state_dir).stop_component(cluster, component, _say)
    except (KeyError, RuntimeError) as err:
        raise click.ClickException(_why(err)) from err


@cli.command()
@_state_option
@_component_options
@click.option(
    "--timeout", default=60.0, show_default=True, help="Seconds to wait for kube-apiserver /readyz."
)
def start(state_dir: Path | None, cluster: str, component: str, timeout: float) -> None:
    """Start a stopped component of one cluster again with the same command line, port and certificates."""
    try:
        _loaded(state_dir).start_component(cluster, component, _say, timeout)
    except (KeyError, RuntimeError, TimeoutError) as err:
        raise click.ClickException(_why(err)) from err


@cli.command("prometheus")
@_state_option
@click.argument("action", type=click.Choice(["start", "stop"]))
@click.option(
    "--scrape",
    "targets",
    multiple=True,
    metavar="JOB=HOST:PORT",
    help="Scrape HOST:PORT as JOB from now on (repeatable; with start).",
)
def prometheus_cmd(state_dir: Path | None, action: str, targets: tuple[str, ...]) -> None:
    """Start the fleet's Prometheus (Debian's prometheus on a free port, HTTPS with a CA of its own;
    stopped with the fleet) and print its URL and CA file, or stop it (start brings it back on the
    same port, with its data)."""
    root = _root(state_dir)
    try:
        if action == "stop":
            prometheus.stop(root, _say)
            return
        local = prometheus.start(root, _say)
    except (RuntimeError, TimeoutError, probe.Exited) as err:
        raise click.ClickException(_why(err)) from err
    jobs: dict[str, list[str]] = {}
    for target in targets:
        job, _, address = target.partition("=")
        if not job or ":" not in address:
            raise click.BadParameter(f"{target!r} is not JOB=HOST:PORT", param_hint="--scrape")
        jobs.setdefault(job, []).append(address)
    for job, addresses in jobs.items():
        local.scrape(job, addresses)
    click.echo(f"{local.url} (CA: {local.ca_file})")


@cli.command("jaeger")
@_state_option
@click.argument("action", type=click.Choice(["build", "start", "stop"]))
def jaeger_cmd(state_dir: Path | None, action: str) -> None:
    """Build the pinned Jaeger (printing its path), start the fleet's Jaeger (traces in memory, OTLP and
    its query API and UI on free ports of 127.0.0.1; stopped with the fleet) and print where to send
    and read traces, or stop it (start brings it back on the same ports, empty)."""
    try:
        if action == "build":
            click.echo(build.ensure_jaeger(_say))
            return
        if action == "stop":
            jaeger.stop(_root(state_dir), _say)
            return
        local = jaeger.start(_root(state_dir), _say)
    except (RuntimeError, TimeoutError, probe.Exited) as err:
        raise click.ClickException(_why(err)) from err
    click.echo(f"OTEL_EXPORTER_OTLP_ENDPOINT={local.otlp_http}")
    click.echo(f"UI and query API: {local.query}")


@cli.command("apply")
@_state_option
@click.option(
    "-f",
    "--filename",
    "files",
    multiple=True,
    required=True,
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
)
@click.option("--cluster", "clusters", multiple=True, help="Only these clusters [default: all].")
def apply_cmd(state_dir: Path | None, files: tuple[Path, ...], clusters: tuple[str, ...]) -> None:
    """Server-side apply YAML files to the fleet's clusters as the admin (e.g. the RedisCluster CRD)."""
    for line in access.apply_files(_loaded(state_dir), list(files), clusters):
        click.echo(line)


@cli.command("stand-in")
@_state_option
@click.option("--cluster", "clusters", multiple=True, help="Only these clusters [default: the light ones].")
def stand_in_cmd(state_dir: Path | None, clusters: tuple[str, ...]) -> None:
    """Run the status stand-in of light clusters until interrupted: it marks every RedisCluster Ready
    for its generation (reason StatusStandIn) since no controller runs there. Not a controller."""
    from devfleet.standin import ReadyStatusStandIn

    loaded = _loaded(state_dir)
    names = clusters or tuple(c.name for c in loaded.clusters if c.profile is fleet.Profile.LIGHT)
    if not names:
        raise click.ClickException("the fleet has no light clusters; name clusters with --cluster")
    for name in names:
        try:
            loaded.cluster(name)
        except KeyError as err:
            raise click.ClickException(_why(err)) from err
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    stand_in = ReadyStatusStandIn(loaded.kubeconfig, names).start()
    _say(f"status stand-in marking RedisClusters Ready on {len(names)} cluster(s); Ctrl-C stops it")
    try:
        while not done.wait(1.0):
            pass
    finally:
        stand_in.stop()
        _say(f"status stand-in stopped after {stand_in.total} status write(s)")


@cli.command("kubeconfig")
@_state_option
def kubeconfig_cmd(state_dir: Path | None) -> None:
    """Print the path of the fleet's admin kubeconfig."""
    click.echo(_loaded(state_dir).kubeconfig)


@cli.command("mint-user")
@_state_option
@click.option("--cluster", required=True)
@click.option("--user", required=True, help="User name (certificate CN).")
@click.option("--group", "groups", multiple=True, help="Groups (certificate O), repeatable.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True)
def mint_user(state_dir: Path | None, cluster: str, user: str, groups: tuple[str, ...], out: Path) -> None:
    """Write a kubeconfig for a user authenticated by a client certificate (no rights until bound)."""
    click.echo(access.user_kubeconfig(_loaded(state_dir), cluster, user, groups, out))


@cli.command("mint-sa")
@_state_option
@click.option("--cluster", required=True)
@click.option("--namespace", required=True)
@click.option("--name", required=True, help="ServiceAccount name (must exist).")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True)
def mint_sa(state_dir: Path | None, cluster: str, namespace: str, name: str, out: Path) -> None:
    """Write a kubeconfig with a bound token of a ServiceAccount."""
    click.echo(access.service_account_kubeconfig(_loaded(state_dir), cluster, namespace, name, out))


@cli.command()
@_state_option
@click.option("--cluster", default=None, help="Only this cluster's components.")
@click.option("--lines", default=40, show_default=True)
def logs(state_dir: Path | None, cluster: str | None, lines: int) -> None:
    """Print the last lines of each component's log."""
    loaded = _loaded(state_dir)
    for p in loaded.processes:
        log = Path(p.log)
        if cluster and log.parent.parent.name != cluster:
            continue
        click.echo(f"==> {log} <==")
        click.echo(fleet.tail(log, lines))


def main() -> None:
    cli(prog_name="syncer-fleet")
