"""``syncer sync --once``: one pass of the agent as one more writer of the fleet, never a second one.

A cluster has one writer at a time, provably: the pass takes the fleet's leader Lease (the one a
``syncer run`` replica holds while it leads), so that every write carries that Lease's fencing token
and the clusters' states refuse a deposed or Lease-less writer. While a running agent holds the Lease
the pass waits for it, up to ``LeaseSettings.acquire_wait``, and then gives up with the holder's
name: the running agent does the passes. A fleet run by sharded replicas is left to them: a cluster
whose owner Lease a replica holds is never written by this command. Without leader election
(``leader_elect`` off) the pass holds nothing (``NO_LEASE``), and a cluster whose state records a
token refuses it: nothing is written there, drift repair included. ``OncePass`` builds the pass whole,
its fence given to its agent when it is built.

Must not: decide anything about the rollout, or act on any cluster before the Lease is held.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from datetime import UTC, datetime

from syncer.agent.loop import ensure_lease_namespace
from syncer.agent.service import Agent, PassResult, Writing
from syncer.agent.sharding import user_agent
from syncer.config import AgentConfig
from syncer.config.settings import AgentSettings
from syncer.domain.progress import Listener
from syncer.errors import ConfigError, FencedOut, KubeError, SyncerError
from syncer.kube import ClientOptions, ClusterClient, KubeApi
from syncer.leader.election import LEASE_API, LeaderElector, LeaseRecord
from syncer.leader.fence import NO_LEASE, Fence, everywhere
from syncer.leader.shards import OWNER_LEASE
from syncer.status.metrics import SyncerMetrics

log = logging.getLogger("syncer.agent")


def once_identity() -> str:
    """The name a ``sync --once`` pass holds the Lease and writes under, apart from a running agent's."""
    return f"sync-once-{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


class OncePass:
    """One ``sync --once`` pass, built whole (see the module docstring): its own identity (named in
    the apiservers' audit logs), and with leader election the home cluster's client and the elector
    of the fleet's leader Lease, whose fence every write of ``agent`` passes; without it the agent
    holds no Lease (``NO_LEASE``)."""

    def __init__(
        self,
        config: AgentConfig,
        settings: AgentSettings,
        metrics: SyncerMetrics,
        stop: threading.Event,
        listener: Listener | None = None,
    ) -> None:
        self.settings = settings
        identity = once_identity()
        self.home: ClusterClient | None = None
        self.elector: LeaderElector | None = None
        fence: Fence = NO_LEASE
        if settings.leader_elect:
            home = settings.home
            try:
                self.home = ClusterClient.from_kubeconfig(
                    home.kubeconfig or settings.kubeconfig, home.context
                )
            except ConfigError as err:
                raise ConfigError(
                    f"the pass holds the fleet's Lease in the home cluster (--kubeconfig, --lease-context), "
                    f"which cannot be reached: {err}; or run it with --no-leader-elect where no agent writes "
                    "the fleet"
                ) from err
            self.elector = LeaderElector(self.home, settings.lease, identity)
            fence = self.elector.fence(settings.lease.duration - settings.lease.renew_deadline)
        writing = Writing(fences=everywhere(fence), client=ClientOptions(user_agent=user_agent(identity)))
        self.agent = Agent(config, settings, metrics, stop, writing, listener=listener, identity=identity)

    def close(self) -> None:
        self.agent.close()
        if self.home is not None:
            self.home.close()


def one_pass(once: OncePass) -> PassResult:
    """One pass of ``once``'s agent holding the fleet's leader Lease (see the module docstring).
    FencedOut when the Lease stays held by another agent, or a sharded replica owns a cluster."""
    agent, settings, elector, client = once.agent, once.settings, once.elector, once.home
    if elector is None or client is None:
        return agent.sync_once()
    _refuse_sharded(agent, settings)
    ensure_lease_namespace(client, settings.lease.namespace)
    _acquire(elector, client, settings, agent.stop)
    results: list[PassResult] = []

    def lead(stop_leading: threading.Event) -> None:
        results.append(agent.sync_once(stop_leading))

    elector.run(agent.stop, lead)
    if not results:
        raise FencedOut("stopped before the pass began")
    return results[0]


def _acquire(elector: LeaderElector, client: KubeApi, settings: AgentSettings, stop: threading.Event) -> None:
    """Take the Lease, waiting up to ``acquire_wait`` while another agent holds it."""
    lease = settings.lease
    deadline = time.monotonic() + lease.acquire_wait
    said = False
    while not elector.try_acquire_or_renew():
        holder = _holder(client, settings)
        if time.monotonic() >= deadline or stop.is_set():
            raise FencedOut(
                f"the Lease {elector.lease_name} is held by {holder or 'another agent'}: a running agent "
                "leads this fleet and runs its passes (trigger one through its webhook), or wait "
                "longer for it with --lease-wait"
            )
        if not said:
            log.info("waiting for the Lease %s, held by %s", elector.lease_name, holder)
            said = True
        stop.wait(lease.retry_period)


def _holder(client: KubeApi, settings: AgentSettings) -> str:
    try:
        lease = client.get(LEASE_API, "Lease", settings.lease.name, settings.lease.namespace)
    except KubeError:
        return ""
    return LeaseRecord.from_lease(lease).holder


def _refuse_sharded(agent: Agent, settings: AgentSettings) -> None:
    """FencedOut when a replica of a sharded group holds a cluster's owner Lease: its renewal, by the
    Lease's own renewTime, is more recent than the Lease's duration (plus one for clock skew)."""
    for cluster in sorted(agent.config.clusters):
        try:
            api = agent.connections(cluster)
            lease = api.get(LEASE_API, "Lease", OWNER_LEASE, settings.state_namespace)
        except SyncerError:
            continue  # no owner Lease, or the cluster cannot be reached (the pass says why)
        record = LeaseRecord.from_lease(lease)
        if record.holder and _renewed_within(record, record.duration * 2):
            raise FencedOut(
                f"{cluster} is owned by {record.holder}, a replica of a sharded group: its replicas run "
                "the passes of the clusters they own (trigger one through a replica's webhook)"
            )


def _renewed_within(record: LeaseRecord, seconds: float) -> bool:
    try:
        renewed = datetime.fromisoformat(record.renew_time.replace("Z", "+00:00"))
    except ValueError:
        return True  # unreadable: taken as held, never as free
    return (datetime.now(UTC) - renewed).total_seconds() < seconds
