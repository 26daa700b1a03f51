"""The settings root: every knob of how the agent runs, each with its default stated once, here.

The agent's files (``AgentConfig``: the source, the trust policy, the clusters, the rollout policy)
say *what* syncer keeps in step; these settings say *how* the process runs: where it keeps its state,
how often it polls, how it elects a leader, what it embeds. Command-line flags fill them in; every
other default in syncer (option dataclasses, flag defaults) refers to the constants below instead of
repeating a number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from syncer.bounded.limits import KUBECONFIG_BYTES

AGENT_NAMESPACE = "syncer-system"
"""The agent's namespace in each cluster: its sync-state ConfigMap, its Events and (in the home
cluster) its Lease live there."""

GIT_TIMEOUT = 60.0
"""Seconds any one git operation (ls-remote, fetch, checkout, verification) may take."""

HEALTH_POLL = 5.0
"""The longest wait, in seconds, between two health checks of a wave waiting on its gate."""

HEALTH_POLL_FOREGROUND = 2.0
"""``HEALTH_POLL`` for ``syncer sync --once``, which shows each check to someone watching."""

POLL_INTERVAL = 60.0
"""Seconds between two polls of the git remote (the webhook polls at once)."""

POLL_JITTER = 5.0
"""Up to this many seconds added at random to each poll, so many agents do not poll together."""

MAX_CONFIG_FILE_BYTES = 1 << 20
"""Bytes any one file of the agent's configuration may have: the config, the trust, rollout and guard
policies and the files they name (OpenPGP keys, CA bundles, tokens, secrets). Checked before the file
is read; a FIFO, a device or a directory is never read."""

MAX_KUBECONFIG_BYTES = KUBECONFIG_BYTES
"""``MAX_CONFIG_FILE_BYTES`` of a kubeconfig, which holds every cluster's certificates (some 2 KiB a
cluster: 16 MiB is thousands of clusters). syncer.kube reads it through the strict reader at every
client it makes (regular file, bounded, strict YAML) and hands the kubernetes client the data."""

WINDOW_RECORD_REFRESH = POLL_INTERVAL
"""Seconds after which a pass that finds a cluster still outside its maintenance window writes the
recorded reason again with the time it judged it (``ClusterSyncState.window_at``), so that the
record shows an agent still confirms it."""

WINDOW_STALE_PASSES = 5
"""``syncer status`` shows a cluster's recorded window reason as stale, not as in force, once no
agent has confirmed it for this many poll intervals (``POLL_INTERVAL``): the agents that judged it
stopped, or run without maintenance windows now."""

WINDOW_STALE_AFTER = POLL_INTERVAL * WINDOW_STALE_PASSES
"""Seconds after ``window_at`` at which a recorded window reason is stale (see
``WINDOW_STALE_PASSES``)."""

DRIFT_INTERVAL = 300.0
"""Seconds between two drift repairs of the clusters already on the revision in force."""

HISTORY_KEEP = 20
"""Entries of its history of revisions each cluster keeps (the oldest forgotten first): the agent
config's ``history.keep``."""

HISTORY_KEEP_MAX = 200
"""The most ``history.keep`` may ask for: each entry's texts are bounded, so that many entries stay
far below the 1 MiB a ConfigMap may hold."""

WEB_TIMEOUT = 10.0
"""Seconds a web metric's request may take by default (its ``timeout``); a slower endpoint gives an
error measurement, never a value."""

MAX_WEB_ANSWER_BYTES = 1024 * 1024
"""The longest JSON answer a web metric reads; a longer one is an error measurement."""

PROMETHEUS_TIMEOUT = 10.0
"""Seconds one query of an analysis may take (connect and answer); a slower Prometheus gives an
error measurement, never a value."""


@dataclass(frozen=True)
class LeaseSettings:
    """A ``coordination.k8s.io`` Lease held by the one replica that acts."""

    name: str = "syncer-agent"
    """The Lease's name."""

    namespace: str = AGENT_NAMESPACE
    """The Lease's namespace (the agent creates it when it is missing)."""

    duration: float = 15.0
    """Seconds a Lease that is not renewed stays held: how soon another replica may take over."""

    renew_deadline: float = 10.0
    """Seconds the holder keeps acting while it cannot renew the Lease (less than ``duration``)."""

    retry_period: float = 2.0
    """Seconds between two renewals, or between two tries of a replica waiting for the Lease (less
    than ``renew_deadline``)."""

    acquire_wait: float = 30.0
    """Seconds ``syncer sync --once`` waits for the Lease while another agent holds it, before it
    gives up and names the holder (a crashed holder's Lease is free after ``duration``)."""


@dataclass(frozen=True)
class ShardSettings:
    """Replicas that split the fleet's clusters between them through Leases (``syncer.leader.shards``)
    instead of electing one leader for the whole fleet. Their timing is the agent's ``LeaseSettings``:
    member Leases live in its namespace of the home cluster, each cluster's owner Lease in the state
    namespace of that cluster."""

    group: str = ""
    """The replica group ("": no sharding; one replica, chosen by leader election, acts on every
    cluster)."""

    identity: str = ""
    """This replica's name within the group ("": the host name and a random suffix). It is also in
    the user agent of every request the replica sends."""


@dataclass(frozen=True)
class HomeCluster:
    """The cluster the agent runs in: where its Lease and its embedded controller's Lease are."""

    kubeconfig: str = ""
    """Kubeconfig file of the home cluster ("": the agent's default kubeconfig)."""

    context: str = ""
    """Context of the home cluster ("": the kubeconfig's current context)."""


@dataclass(frozen=True)
class ControllerSettings:
    """The embedded RedisCluster controller."""

    enabled: bool = False
    """Run it (for the home cluster, leader-elected)."""

    every_cluster: bool = False
    """Run one per cluster of the config instead, without election (local fleets)."""

    watch_namespace: str = ""
    """Only RedisClusters of this namespace ("": all namespaces)."""

    workers: int = 2
    """Reconciles running at once."""

    topology: bool = False
    """Form the Redis Cluster topology by talking to the Redis servers (off where pods are fake)."""


@dataclass(frozen=True)
class HttpSettings:
    """The HTTP server of /metrics, /healthz, /readyz and /hooks/git, and the limits that keep one
    client from starving the others."""

    host: str = "127.0.0.1"
    """Bind address of both listeners (``port`` and ``probe_port``): loopback unless told otherwise
    (the chart binds all addresses of the pod's own network namespace so the kubelet's probes and
    the Service reach it)."""

    port: int = 8080
    """Port (0: any free port, announced in the log)."""

    max_body: int = 1 << 20
    """Bytes a webhook body may have."""

    request_timeout: float = 10.0
    """Seconds from accepting a connection to having read the request line, headers and body."""

    io_timeout: float = 5.0
    """Seconds each single read or write may take."""

    max_connections: int = 32
    """Connections served at once (more are refused with 503)."""

    max_per_client: int = 8
    """Connections one client address may hold at once (more are refused with 429), so that clients
    from one address cannot take every one of ``max_connections``."""

    probe_port: int = 8081
    """Port of the probe listener: ``GET /healthz`` and ``GET /readyz`` only, bound to ``host``, with
    connections and threads of its own that no client of ``port`` can take, so slow or many webhook
    clients never make a probe fail (0: any free port, announced in the log)."""

    probe_connections: int = 16
    """Connections the probe listener serves at once (more are refused with 503)."""

    probe_per_client: int = 4
    """Connections one client address may hold at once on the probe listener (more are refused with
    429): the kubelet's liveness and readiness probes need two."""

    probe_timeout: float = 2.0
    """Seconds a probe request may take to arrive whole on the probe listener (a probe is one short
    line; the kubelet gives up after its own timeout, 1 s by default)."""


@dataclass(frozen=True)
class AgentSettings:
    """How one agent process runs."""

    kubeconfig: str = ""
    """Kubeconfig for the clusters the config does not map to a file of their own ("": $KUBECONFIG)."""

    state_namespace: str = AGENT_NAMESPACE
    """Namespace of each cluster's sync-state ConfigMap and of the Events about it."""

    interval: float = POLL_INTERVAL
    """See ``POLL_INTERVAL``."""

    jitter: float = POLL_JITTER
    """See ``POLL_JITTER``."""

    drift_interval: float = DRIFT_INTERVAL
    """See ``DRIFT_INTERVAL``."""

    health_poll: float = HEALTH_POLL
    """See ``HEALTH_POLL``."""

    http: HttpSettings = HttpSettings()
    """The HTTP server and its limits."""

    hook_secret_file: Path | None = None
    """File holding the webhook's shared secret (None: every webhook call is refused)."""

    leader_elect: bool = True
    """Act only while holding ``lease`` (off: one replica that acts at once)."""

    lease: LeaseSettings = LeaseSettings()
    """The agent's Lease."""

    shards: ShardSettings = ShardSettings()
    """Sharding among replicas (off unless ``shards.group`` is set; then ``leader_elect`` is ignored)."""

    home: HomeCluster = HomeCluster()
    """Where the Lease is held."""

    controller: ControllerSettings = ControllerSettings()
    """The embedded controller."""


@dataclass(frozen=True)
class NotifySettings:
    """How notifications leave the agent (``syncer.notify``): the defaults of the config's
    ``notifications`` section, and the limits that keep a slow or failing receiver from delaying a
    pass."""

    fold_window: float = 600.0
    """Seconds within which a notice equal to one already sent (same class, cluster, wave, revision
    and reason) to the same receiver is folded into it, not sent again."""

    unreachable_after: float = 300.0
    """Seconds a cluster stays unreachable before a ``cluster-unreachable`` notice is sent."""

    window_wait_after: float = 3600.0
    """Seconds a wave waits for a closed maintenance window before a ``wave-failed`` notice (reason
    ``window-wait``) is sent."""

    queue: int = 256
    """Notices waiting for each receiver; one more is dropped (and counted) instead of waiting."""

    timeout: float = 10.0
    """Seconds each request to a receiver may take (to connect, and again to read its answer)."""

    retries: int = 5
    """Tries after the first one for a request that failed or was answered 429 or 5xx."""

    backoff: float = 1.0
    """Back-off factor of the retries, in seconds (0, 2, 4, 8, … times this, with urllib3's rules)."""

    backoff_max: float = 60.0
    """The longest wait between two tries, in seconds."""
