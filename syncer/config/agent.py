"""The agent's own configuration file: where the fleet repository is, how to reach it, which policy.

Credentials are given as paths to files (mounted secrets); the secrets themselves are read only when
a git operation needs them and never become part of a config value, so printing a config is safe.
Each file named here is checked at load to be a regular file within ``MAX_CONFIG_FILE_BYTES`` (a
FIFO, a device or a directory is refused), as every file of the agent is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from syncer.config.guards import load_guard_policy
from syncer.config.loading import Fields, load_yaml_file
from syncer.config.notifications import NotificationConfig, load_notifications
from syncer.config.rollout import RolloutPolicy
from syncer.config.settings import (
    GIT_TIMEOUT,
    HISTORY_KEEP,
    HISTORY_KEEP_MAX,
    MAX_KUBECONFIG_BYTES,
    HomeCluster,
)
from syncer.config.trace_links import TraceLinks, load_trace_links
from syncer.config.trust import TrustPolicy, load_trust_policy
from syncer.guards import GuardPolicy


@dataclass(frozen=True)
class GitCredentials:
    """Files holding the secrets to reach the remote: an SSH private key (with an optional known_hosts
    file) for ``ssh://``/scp-style URLs, or an HTTPS token sent as basic auth with ``token_user``."""

    ssh_key_file: Path | None = None
    known_hosts_file: Path | None = None
    token_file: Path | None = None
    token_user: str = "x-access-token"


@dataclass(frozen=True)
class SourceOptions:
    """Where the fleet repository is and how to keep a local copy of it.

    ``clone_filter`` is the partial-clone filter of the one clone (``""`` for a full clone); the
    commit and tree history is always complete so every new commit can be verified; a repository on
    this machine (a path or ``file://``) is always cloned whole. ``timeout`` is the deadline in seconds
    of each git operation. A tip that does not descend from the last synced (or
    last accepted) revision is refused unless ``allow_history_rewrite`` (the trust policy's say).
    ``branch`` "" (no ``source.branch`` in the config) follows the branch the remote's ``HEAD``
    names, as ``git clone`` and the CLI's commands do.
    """

    url: str
    cache_dir: Path = Path("/var/cache/syncer")
    branch: str = ""
    credentials: GitCredentials = field(default_factory=GitCredentials)
    timeout: float = GIT_TIMEOUT
    allow_history_rewrite: bool = False
    clone_filter: str = "blob:none"


@dataclass(frozen=True)
class ClusterAccess:
    """How to reach one cluster of the fleet: a kubeconfig context, and the kubeconfig file holding it
    (None: the one given on the command line or by $KUBECONFIG)."""

    context: str
    kubeconfig: Path | None = None


@dataclass(frozen=True)
class AgentConfig:
    """The agent's files, loaded: the fleet repository's source, the trust policy, how each cluster is
    reached, the rollout policy (one wave when no rollout policy file is given), the guard policy
    (no rules when the config names none), the notifications (none when the config has none) and how
    many entries of its history each cluster keeps (``history.keep``) and the link of a trace
    (``tracing.urlTemplate``; none by default)."""

    source: SourceOptions
    trust: TrustPolicy
    clusters: Mapping[str, ClusterAccess] = field(default_factory=dict)
    rollout: RolloutPolicy = field(default_factory=RolloutPolicy.single_wave)
    guards: GuardPolicy = field(default_factory=GuardPolicy)
    notifications: NotificationConfig = field(default_factory=NotificationConfig)
    history_keep: int = HISTORY_KEEP
    tracing: TraceLinks = field(default_factory=TraceLinks)


def _clusters(top: Fields, raw: object, base: Path) -> dict[str, ClusterAccess]:
    """The optional ``clusters:`` mapping, cluster name -> {context, kubeconfig}."""
    section = top.child("clusters")
    names = list(raw) if isinstance(raw, Mapping) else []
    found: dict[str, ClusterAccess] = {}
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise top.error("clusters", f"cluster names must be non-empty strings, not {name!r}")
        entry = section.child(name)
        entry.reject_unknown({"context", "kubeconfig"})
        kubeconfig = (
            entry.check_file("kubeconfig", base / entry.string("kubeconfig"), MAX_KUBECONFIG_BYTES)
            if entry.has("kubeconfig")
            else None
        )
        found[name] = ClusterAccess(context=entry.string("context", name), kubeconfig=kubeconfig)
    return found


def load_agent_config(path: Path) -> AgentConfig:
    """Load the agent config and the trust and guard policies it points at (relative paths are from
    its folder)."""
    base = path.parent
    loaded = load_yaml_file(path)
    data, top = loaded.data, Fields.of(loaded)
    top.reject_unknown(
        {"source", "trustPolicy", "guardPolicy", "clusters", "notifications", "history", "tracing"}
    )
    src = top.child("source")
    src.reject_unknown({"url", "branch", "cacheDir", "timeoutSeconds", "credentials"})
    url = src.string("url")
    if url.startswith("-"):
        raise src.error("url", "must not start with '-'")
    if urlsplit(url).password:
        raise src.error("url", "must not hold a password; put the token in credentials.tokenFile")
    branch = src.string("branch", "")
    if branch.startswith("-") or " " in branch:
        raise src.error("branch", f"{branch!r} is not a branch name")
    creds = src.child("credentials")
    creds.reject_unknown({"sshKeyFile", "knownHostsFile", "tokenFile", "tokenUser"})

    def optional_path(key: str) -> Path | None:
        return creds.check_file(key, base / creds.string(key)) if creds.has(key) else None

    cache_dir = base / src.string("cacheDir", "/var/cache/syncer")
    timeout = src.number("timeoutSeconds", GIT_TIMEOUT)
    credentials = GitCredentials(
        ssh_key_file=optional_path("sshKeyFile"),
        known_hosts_file=optional_path("knownHostsFile"),
        token_file=optional_path("tokenFile"),
        token_user=creds.string("tokenUser", "x-access-token"),
    )
    clusters = _clusters(top, data.get("clusters"), base)
    trust = load_trust_policy(base / top.string("trustPolicy"))
    guards = load_guard_policy(base / top.string("guardPolicy")) if top.has("guardPolicy") else GuardPolicy()
    notifications = load_notifications(top.child("notifications"), data.get("notifications"), base)
    source = SourceOptions(
        url=url,
        cache_dir=cache_dir,
        branch=branch,
        credentials=credentials,
        timeout=timeout,
        allow_history_rewrite=trust.allow_history_rewrite,
    )
    history = top.child("history")
    history.reject_unknown({"keep"})
    keep = history.number("keep", HISTORY_KEEP)
    if keep != int(keep) or not 1 <= keep <= HISTORY_KEEP_MAX:
        raise history.error("keep", f"must be a whole number from 1 to {HISTORY_KEEP_MAX}, not {keep:g}")
    return AgentConfig(
        source=source,
        trust=trust,
        clusters=clusters,
        guards=guards,
        notifications=notifications,
        history_keep=int(keep),
        tracing=load_trace_links(top.child("tracing")),
    )


def home_cluster(config: AgentConfig, kubeconfig: str, lease_context: str) -> HomeCluster:
    """The cluster holding the fleet's Lease: ``lease_context`` of ``kubeconfig`` when either is
    given (``kubeconfig`` may come from ``$KUBECONFIG``); else the first cluster of the config when it
    names a kubeconfig of its own (a config whose clusters each name theirs has no default one);
    else the current context of the default kubeconfig."""
    if kubeconfig or lease_context or not config.clusters:
        return HomeCluster(context=lease_context)
    first = next(iter(config.clusters.values()))
    if first.kubeconfig is None:
        return HomeCluster()
    return HomeCluster(kubeconfig=str(first.kubeconfig), context=first.context)
