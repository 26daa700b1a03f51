"""Redis Cluster topology as values: nodes, options, node views and the verdict on them.

Owns: the pure half of topology management -- judging what the nodes said (``NodeView``) into a
``TopologyReport``, and what a formation still waits for (``unmet`` pairs, ``misplaced``
replicas). Must not: open connections or sleep; ``topology.py`` does the I/O and feeds the views it
read into ``judge``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from syncer.controller.formation import FormationListener, untold
from syncer.controller.topology_parse import SLOT_COUNT, ClusterInfo, ClusterNodeEntry, SlotRange
from syncer.errors import SyncerError
from syncer.leader.fence import UNFENCED, Fence


class TopologyError(SyncerError):
    """A Redis node could not be read, refused a command, or answered something unparseable.

    ``node`` is the ``host:port`` concerned; the message keeps Redis's own error text.
    """

    def __init__(self, node: str, message: str, *, unreachable: bool = False) -> None:
        self.node = node
        self.unreachable = unreachable
        super().__init__(f"{node}: {message}")


@dataclass(frozen=True, order=True)
class RedisNode:
    """One Redis server as the caller addresses it."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class TopologyOptions:
    """How topology operations talk to Redis and how long they wait.

    ``timeout`` bounds every single network call (connect and read, seconds). ``meet_timeout`` bounds
    the wait for gossip to spread after CLUSTER MEET; ``ready_timeout`` bounds the wait for
    ``cluster_state:ok`` at the end of ``bootstrap`` (0 looks once and does not wait);
    ``start_timeout`` the wait, in a converging pass over a cluster being formed, for servers whose
    pods are up but that do not accept connections yet; ``poll_interval`` is how often every wait
    looks again.
    ``slot_batch`` is the most slot ranges sent in one CLUSTER ADDSLOTSRANGE. ``migrate_batch`` is
    the most keys one MIGRATE moves (the source blocks while it serialises them), ``migrate_depth``
    the most MIGRATE commands sent in one round trip (the source serves no other client while it
    runs them one after the other, each a round trip to the target), ``migrate_timeout`` its I/O
    timeout in milliseconds; ``slot_group`` slots move together (one round trip per step).
    ``failover_timeout`` bounds the wait for a CLUSTER FAILOVER.
    ``tls_ca``, ``tls_cert`` and ``tls_key`` are files: with ``tls_ca`` set every connection uses TLS
    (the server certificate is checked against the CA, not against the pod IP).
    ``fence`` is passed before every command to a server (``FencedOut`` when this controller may no
    longer act: it lost the Lease, or was frozen past it). ``told`` is told each formation step as
    it is done (``formation``).
    """

    timeout: float = 5.0
    password: str | None = None
    username: str | None = None
    meet_timeout: float = 20.0
    ready_timeout: float = 30.0
    poll_interval: float = 0.05
    start_timeout: float = 5.0
    slot_batch: int = 256
    migrate_batch: int = 500
    migrate_depth: int = 1
    slot_group: int = 8
    migrate_timeout: int = 10000
    failover_timeout: float = 30.0
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    fence: Fence = field(default=UNFENCED, compare=False)
    told: FormationListener = field(default=untold, compare=False)

    def tls_arguments(self) -> dict[str, Any]:
        """redis-py connection arguments for TLS, empty without ``tls_ca``."""
        if not self.tls_ca:
            return {}
        return {
            "ssl": True,
            "ssl_ca_certs": self.tls_ca,
            "ssl_certfile": self.tls_cert,
            "ssl_keyfile": self.tls_key,
            "ssl_check_hostname": False,
        }

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")
        if min(self.meet_timeout, self.ready_timeout, self.start_timeout) < 0:
            raise ValueError("meet_timeout, ready_timeout and start_timeout must not be negative")
        if self.poll_interval <= 0:
            raise ValueError("poll_interval must be positive")
        if min(self.slot_batch, self.migrate_batch, self.slot_group) < 1:
            raise ValueError("slot_batch, migrate_batch and slot_group must be at least 1")


@dataclass(frozen=True)
class NodeView:
    """What one node told us about the cluster, or why it told us nothing.

    A view with ``info`` is readable; ``error`` (already naming the node) says why it is not.
    """

    node: RedisNode
    info: ClusterInfo | None = None
    entries: tuple[ClusterNodeEntry, ...] = ()
    error: str = ""
    unreachable: bool = False

    @property
    def myself(self) -> ClusterNodeEntry | None:
        return next((e for e in self.entries if e.is_myself), None)


@dataclass(frozen=True)
class ShardReport:
    """One master as the cluster sees it: its slots and the replicas following it."""

    master: str
    node_id: str
    slots: int
    slot_ranges: tuple[SlotRange, ...] = ()
    replicas: tuple[str, ...] = ()
    failed: bool = False


@dataclass(frozen=True)
class TopologyReport:
    """The verdict on a cluster's topology, ready for a status condition.

    ``failed_nodes`` are nodes some reachable peer flags ``fail`` or ``fail?`` (``suspected_nodes`` is
    the part flagged only ``fail?``); ``unreachable`` are given nodes we could not connect to.
    ``masters`` lists every master of the reference view (the most recent reachable one), those
    without slots included; ``actions`` lists the commands ``bootstrap`` ran, empty for ``inspect``.
    """

    healthy: bool
    cluster_state: str
    slots_covered: int
    errors: tuple[str, ...] = ()
    failed_nodes: tuple[str, ...] = ()
    suspected_nodes: tuple[str, ...] = ()
    unreachable: tuple[str, ...] = ()
    masters: tuple[ShardReport, ...] = ()
    expected_shards: int = 0
    actions: tuple[str, ...] = ()
    open_slots: tuple[int, ...] = ()
    ghost_nodes: tuple[str, ...] = ()
    replication_problems: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """One CamelCase word for a status condition: the most serious thing wrong, or Healthy."""
        if self.healthy:
            return "Healthy"
        checks = (
            (self.cluster_state not in ("ok", "unknown"), "ClusterStateFail"),
            (bool(self.unreachable), "NodesUnreachable"),
            (self.slots_covered < SLOT_COUNT and self.cluster_state != "unknown", "SlotsUncovered"),
            (bool(self.failed_nodes), "NodesFailed"),
            (bool(self.open_slots), "SlotsOpen"),
            (bool(self.ghost_nodes), "GhostNodes"),
            (bool(self.replication_problems), "ReplicationBroken"),
        )
        return next((reason for found, reason in checks if found), "TopologyUnhealthy")

    @property
    def masters_with_slots(self) -> tuple[ShardReport, ...]:
        return tuple(m for m in self.masters if m.slots and not m.failed)

    @property
    def masters_without_slots(self) -> tuple[ShardReport, ...]:
        return tuple(m for m in self.masters if not m.slots)

    @property
    def replica_count(self) -> int:
        return sum(len(m.replicas) for m in self.masters)

    def summary(self) -> str:
        """One line for a status condition message."""
        served = len(self.masters_with_slots)
        head = (
            f"cluster_state {self.cluster_state}, {self.slots_covered}/{SLOT_COUNT} slots covered, "
            f"{served}/{self.expected_shards} masters with slots, {self.replica_count} replicas"
        )
        if self.healthy:
            return f"healthy: {head}"
        parts = [f"unhealthy: {head}"]
        if self.failed_nodes:
            parts.append(f"failed: {', '.join(self.failed_nodes)}")
        if self.unreachable:
            parts.append(f"unreachable: {', '.join(self.unreachable)}")
        if self.open_slots:
            more = f" (and {len(self.open_slots) - 5} more)" if len(self.open_slots) > 5 else ""
            parts.append(f"open slots: {', '.join(map(str, self.open_slots[:5]))}{more}")
        if self.ghost_nodes:
            parts.append(f"ghost nodes: {', '.join(self.ghost_nodes)}")
        if self.replication_problems:
            parts.append(f"replication: {'; '.join(self.replication_problems)}")
        if self.errors:
            more = f" (and {len(self.errors) - 1} more)" if len(self.errors) > 1 else ""
            parts.append(f"error: {self.errors[0]}{more}")
        return "; ".join(parts)


def judge(
    views: Sequence[NodeView],
    expected_shards: int,
    errors: Sequence[str] = (),
    replication: Sequence[str] = (),
    *,
    every_node: bool = False,
) -> TopologyReport:
    """Judge what the nodes told us (and ``replication``: problems found in the replicas' ROLE).

    Healthy only if every readable node says ``cluster_state:ok``, the reference view covers all
    16384 slots with masters nobody flags failed, exactly ``expected_shards`` masters serve slots,
    no node is flagged ``fail``/``fail?``, ``noaddr`` or handshake, none is unreachable, no slot is
    open (migrating or importing), every replication link is up, and nothing went wrong on the way.
    With ``every_node`` (the views are of every node the cluster should have, all answering), also
    only if no view lists an entry that is none of them and that it is not linked to: a node's former
    id (a pod back with a new one) that Redis has not flagged yet stands for a member nobody reaches.
    """
    problems = list(dict.fromkeys([*errors, *(v.error for v in views if v.error)]))
    unreachable = tuple(str(v.node) for v in views if v.unreachable)
    readable = [v for v in views if v.info is not None and v.entries]
    if not readable:
        return TopologyReport(
            healthy=False,
            cluster_state="unknown",
            slots_covered=0,
            errors=tuple(problems) or ("no node could be read",),
            unreachable=unreachable,
            expected_shards=expected_shards,
        )
    reference = _reference_view(readable)
    failed, confirmed = _flagged(readable)
    problems.extend(_membership_problems(readable, reference))
    masters, covered = _shards(reference, failed)
    problems.extend(_stray_replicas(reference))
    open_slots = sorted(
        {slot for v in readable if (me := v.myself) is not None for slot, _ in (*me.migrating, *me.importing)}
    )
    ghosts = sorted(
        {e.name for v in readable for e in v.entries if e.flags & {"noaddr", "handshake"}} - failed
    )
    if every_node and len(readable) == len(views):
        ghosts.extend(_strangers(readable, failed, ghosts))
    states = [v.info.state for v in readable if v.info is not None]
    state = "ok" if all(s == "ok" for s in states) else next(s for s in states if s != "ok")
    report = TopologyReport(
        healthy=False,
        cluster_state=state,
        slots_covered=covered,
        errors=tuple(problems),
        failed_nodes=tuple(sorted(failed)),
        suspected_nodes=tuple(sorted(failed - confirmed)),
        unreachable=unreachable,
        masters=masters,
        expected_shards=expected_shards,
        open_slots=tuple(open_slots),
        ghost_nodes=tuple(ghosts),
        replication_problems=tuple(replication),
    )
    healthy = (
        state == "ok"
        and covered == SLOT_COUNT
        and len(report.masters_with_slots) == expected_shards
        and not failed
        and not unreachable
        and not problems
        and not open_slots
        and not ghosts
        and not replication
    )
    return replace(report, healthy=healthy)


def _strangers(readable: Sequence[NodeView], failed: set[str], ghosts: Sequence[str]) -> list[str]:
    """Entries that are none of the readable nodes and that nobody is linked to (not already flagged),
    named with their id. A node still linked (one leaving in a scale-in) is a live member."""
    own = {me.node_id for v in readable if (me := v.myself) is not None}
    return sorted(
        {
            f"{e.name} (id {e.node_id[:12]}, no such node)"
            for v in readable
            for e in v.entries
            if e.node_id not in own
            and e.link_state != "connected"
            and e.name not in failed
            and e.name not in ghosts
        }
    )


def _reference_view(readable: Sequence[NodeView]) -> NodeView:
    """The view with the highest current epoch; the first given wins a tie."""
    best = readable[0]
    for view in readable[1:]:
        if _epoch(view) > _epoch(best):
            best = view
    return best


def _epoch(view: NodeView) -> int:
    return view.info.current_epoch if view.info is not None else -1


def _flagged(readable: Sequence[NodeView]) -> tuple[set[str], set[str]]:
    """Nodes any view flags ``fail`` or ``fail?``, and the part flagged ``fail``."""
    failed: set[str] = set()
    confirmed: set[str] = set()
    for view in readable:
        for entry in view.entries:
            if entry.is_failed or entry.is_suspected:
                failed.add(entry.name)
            if entry.is_failed:
                confirmed.add(entry.name)
    return failed, confirmed


def _membership_problems(readable: Sequence[NodeView], reference: NodeView) -> list[str]:
    """Readable nodes that are not part of the reference node's cluster."""
    members = {e.node_id for e in reference.entries}
    problems: list[str] = []
    for view in readable:
        me = view.myself
        if me is None:
            problems.append(f"{view.node}: CLUSTER NODES has no line flagged myself")
        elif me.node_id not in members:
            problems.append(
                f"{view.node}: node {me.node_id} is not a member of the cluster seen by {reference.node}"
            )
    return problems


def _shards(reference: NodeView, failed: set[str]) -> tuple[tuple[ShardReport, ...], int]:
    """Every master of the reference view with its replicas, and how many slots healthy masters serve."""
    masters: list[ShardReport] = []
    covered: set[int] = set()
    for entry in reference.entries:
        if not entry.is_master:
            continue
        down = entry.name in failed
        if not down:
            for r in entry.slots:
                covered.update(range(r.start, r.end + 1))
        followers = sorted(e.name for e in reference.entries if e.is_replica and e.master_id == entry.node_id)
        masters.append(
            ShardReport(entry.name, entry.node_id, entry.slot_count, entry.slots, tuple(followers), down)
        )
    masters.sort(key=lambda m: (m.slot_ranges[0].start if m.slot_ranges else SLOT_COUNT, m.master))
    return tuple(masters), len(covered)


def _stray_replicas(reference: NodeView) -> list[str]:
    """Replicas whose master is not a known master in the reference view."""
    masters = {e.node_id for e in reference.entries if e.is_master}
    return [
        f"{reference.node}: replica {e.name} follows {e.master_id or 'nobody'}, which is not a known master"
        for e in reference.entries
        if e.is_replica and e.master_id not in masters
    ]


def unmet(views: Sequence[NodeView], ids: dict[RedisNode, str]) -> list[str]:
    """``a does not know b yet`` for every pair still to be introduced (or a view's error)."""
    names = {node_id: str(node) for node, node_id in ids.items()}
    problems: list[str] = []
    for view in views:
        if view.error:
            problems.append(view.error)
            continue
        known = {e.node_id for e in view.entries if e.is_known}
        problems.extend(f"{view.node} does not know {names[i]} yet" for i in ids.values() if i not in known)
    return problems


def misplaced(
    views: Sequence[NodeView],
    layout: Sequence[Sequence[RedisNode]],
    masters: Sequence[RedisNode],
    ids: dict[RedisNode, str],
) -> list[str]:
    """Replicas that some node does not yet see following their shard's master."""
    problems: list[str] = []
    for shard, master in zip(layout, masters, strict=True):
        for node in shard:
            if node == master:
                continue
            for view in views:
                entry = next((e for e in view.entries if e.node_id == ids[node]), None)
                if entry is None or not entry.is_replica or entry.master_id != ids[master]:
                    problems.append(f"{view.node} does not see {node} following {master} yet")
    return problems
