"""Redis' failover-auth window: whether Redis would elect a replica now, from the elections seen.

Redis refuses an election for a while after the last one. A replica that started an election may
start the next one only ``2 * max(2 * cluster-node-timeout, 2 s)`` later (its ``failover_auth_time``
retry), and a master votes for a replica of master M only ``2 * cluster-node-timeout`` after it last
voted for a replica of M. A ``CLUSTER FAILOVER`` sent inside that window is not refused out loud: the
master pauses its writes for the manual failover, nobody is elected, and Redis drops the failover
after five seconds.

Owns: the record of elections (``ElectionLog``: each failover the controller asked for, and each
election a node's ``CLUSTER INFO`` shows it started since the last look -- its count of failover
auth requests sent went up -- so elections Redis held on its own, or lost, count too), the pure
decision (``failover_wait``, ``order_heirs``), and reading what the decision needs from Redis
(``heir_wait``, ``heir_order``: node ids and ``cluster-node-timeout``). Redis keeps no time of an
election; the record lives in the controller's process, and a controller that starts counts every
node that has sent any request as elected at its first look (it cannot know when).

Must not: change the Redis cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from syncer.controller.topology_model import RedisNode, TopologyError
from syncer.controller.topology_parse import ClusterNodeEntry

if TYPE_CHECKING:  # topology_client feeds the record: no import at run time
    from syncer.controller.topology_client import Connections

FALLBACK_NODE_TIMEOUT = 15.0
"""Seconds of ``cluster-node-timeout`` assumed when a server does not tell (Redis' own default)."""

FORGET_AFTER = 600.0
"""Seconds after which an election is dropped from the record (longer than any window)."""


@dataclass(frozen=True)
class AuthWindow:
    """Redis' waits after an election, from its ``cluster-node-timeout`` in seconds."""

    node_timeout: float

    @property
    def retry(self) -> float:
        """Seconds before a replica that started an election may start another."""
        return 2 * max(2 * self.node_timeout, 2.0)

    @property
    def vote(self) -> float:
        """Seconds before the masters vote again for a replica of a master they voted about."""
        return 2 * self.node_timeout


@dataclass(frozen=True)
class Election:
    """An election at ``at`` (``time.monotonic``) that ``winner`` started, for the shard of master
    ``former`` (node ids; ``former`` is "" when unknown)."""

    at: float
    winner: str
    former: str = ""


def failover_wait(
    history: Sequence[Election], candidate: str, master: str, now: float, window: AuthWindow
) -> tuple[float, str]:
    """Seconds until Redis would hold an election of replica ``candidate`` to replace ``master``
    (0 when it would now), and why it would not. Pure."""
    wait, why = 0.0, ""
    for election in history:
        age = now - election.at
        if election.winner == candidate and window.retry - age > wait:
            wait = window.retry - age
            why = (
                f"it started an election {age:.1f}s ago and Redis lets a replica start another only "
                f"{window.retry:g}s after its last"
            )
        if master and election.former == master and window.vote - age > wait:
            wait = window.vote - age
            why = (
                f"the masters voted for a replica of its master {age:.1f}s ago and vote again about the "
                f"same master only after {window.vote:g}s"
            )
    return wait, why


@dataclass(frozen=True)
class Heir:
    """A replica that may take over, how long Redis would refuse its election, and why."""

    node: RedisNode
    wait: float = 0.0
    why: str = ""


def order_heirs(heirs: Sequence[Heir]) -> tuple[list[Heir], str]:
    """The heirs to ask in turn: those Redis would elect now in the order given, then the others by
    the shortest wait; and a note when the first choice is not the first heir given. Pure."""
    ready = [h for h in heirs if h.wait <= 0]
    waiting = sorted((h for h in heirs if h.wait > 0), key=lambda h: h.wait)
    order = [*ready, *waiting]
    if not order or order[0].node == heirs[0].node:
        return order, ""
    first, chosen = heirs[0], order[0]
    note = (
        f"{chosen.node} takes over instead of {first.node}: Redis would refuse {first.node}'s election "
        f"for {first.wait:.1f}s more ({first.why})"
    )
    return order, note


class ElectionLog:
    """The elections seen by this process, by node id; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._elections: list[Election] = []
        # node id -> (replica?, master id, auth requests sent, when) at the last look.
        self._seen: dict[str, tuple[bool, str, int, float]] = {}

    def asked(self, winner: str, former: str, at: float) -> None:
        """The controller asked ``winner`` to take over from ``former`` (an election starts)."""
        with self._lock:
            self._add(Election(at, winner, former))

    def observe(self, me: ClusterNodeEntry, requests: int, at: float) -> None:
        """A node's own CLUSTER NODES line and the failover auth requests it has sent since it started
        (``CLUSTER INFO``), at ``at``: more requests than at the last look means it started an
        election in between, won or not (for the master it followed then), counted at ``at`` unless
        the controller's own request since the last look already is. At the first look, a node that
        has sent any started an election at an unknown time since it started: counted at ``at``,
        as if it were recent (a controller that starts does not know when). Config epochs do not
        tell: a replica's line shows its master's."""
        with self._lock:
            before = self._seen.get(me.node_id)
            self._seen[me.node_id] = (me.is_replica, me.master_id, requests, at)
            if before is None:
                if requests > 0:
                    self._add(Election(at, me.node_id, me.master_id if me.is_replica else ""))
                return
            if requests <= before[2]:
                return  # nothing new, or the server restarted (its count, like its window, anew)
            if any(e.winner == me.node_id and e.at >= before[3] for e in self._elections):
                return
            self._add(Election(at, me.node_id, before[1] if before[0] else me.master_id))

    def _add(self, election: Election) -> None:
        self._elections.append(election)
        self._prune(election.at)

    def history(self) -> tuple[Election, ...]:
        with self._lock:
            return tuple(self._elections)

    def _prune(self, now: float) -> None:
        self._elections = [e for e in self._elections if now - e.at < FORGET_AFTER]
        if len(self._seen) > 10000:
            self._seen = {k: v for k, v in self._seen.items() if now - v[3] < FORGET_AFTER}


ELECTIONS = ElectionLog()
"""The controller process's record (fed by every look at a node, ``topology_client.observe``)."""


def node_timeout(conns: Connections, node: RedisNode) -> float:
    """``cluster-node-timeout`` of ``node`` in seconds (Redis' default when it does not say)."""
    try:
        reply = conns.call(node, "CONFIG", "GET", "cluster-node-timeout")
    except TopologyError:
        return FALLBACK_NODE_TIMEOUT
    values = (
        [v.decode() if isinstance(v, bytes) else str(v) for v in reply] if isinstance(reply, list) else []
    )
    if isinstance(reply, dict):
        values = [str(v) for v in reply.values()]
    try:
        return int(values[-1]) / 1000.0
    except (IndexError, ValueError):
        return FALLBACK_NODE_TIMEOUT


def _myid(conns: Connections, node: RedisNode) -> str:
    try:
        return conns.run(node, "CLUSTER", "MYID").strip()
    except TopologyError:
        return ""


def heir_wait(conns: Connections, node: RedisNode, master: RedisNode, now: float) -> Heir:
    """How long Redis would refuse the election of ``node`` to replace ``master`` (``failover_wait``
    over the record, with the window of ``node``'s ``cluster-node-timeout``)."""
    node_id = _myid(conns, node)
    if not node_id:
        return Heir(node)
    window = AuthWindow(node_timeout(conns, node))
    wait, why = failover_wait(ELECTIONS.history(), node_id, _myid(conns, master), now, window)
    return Heir(node, wait, why)


def heir_order(
    conns: Connections, candidates: Sequence[RedisNode], master: RedisNode, now: float
) -> tuple[list[Heir], str]:
    """``candidates`` (replicas of ``master``, in preference order) in the order to ask them, each
    with Redis' wait, and a note when the preferred one was passed over (``order_heirs``)."""
    return order_heirs([heir_wait(conns, node, master, now) for node in candidates])
