"""Before pods restart (an upgrade step), move mastership off them: a master about to be restarted
hands over to an in-sync replica first, preferring one that already runs the new template and, among
those, one Redis would elect now (``Resharder.hand_over``).

``prepare_restarts`` returns, per shard, whether its restarts may go ahead now. A shard whose master
would restart while no replica can take over yet is held back: the caller keeps that shard's
StatefulSet partition above the master, so the other pods are updated first and the next pass finds
an upgraded replica to fail over to.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass

from syncer.controller.topology_client import Connections, observe
from syncer.controller.topology_model import RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_parse import replication_state
from syncer.controller.topology_reshard import Resharder


@dataclass(frozen=True)
class ShardRestart:
    """One shard's pods in ordinal order, which of them are about to restart and which already run
    the new template."""

    members: tuple[RedisNode, ...]
    restarting: frozenset[RedisNode]
    updated: frozenset[RedisNode]


@dataclass(frozen=True)
class RestartPlan:
    """``held`` lists the shards (by position) whose master must not restart yet; ``events`` the
    failovers done; ``problems`` what could not be read or done."""

    held: frozenset[int]
    events: tuple[tuple[str, str], ...] = ()
    problems: tuple[str, ...] = ()


def prepare_restarts(shards: Sequence[ShardRestart], options: TopologyOptions) -> RestartPlan:
    held: set[int] = set()
    events: list[tuple[str, str]] = []
    problems: list[str] = []
    with closing(Connections(options)) as conns:
        for index, shard in enumerate(shards):
            if not shard.restarting:
                continue  # nothing to move off: its servers are not asked
            views = {node: observe(conns, node) for node in shard.members}
            master = next(
                (n for n, v in views.items() if (me := v.myself) is not None and me.is_master), None
            )
            if master is None or master not in shard.restarting:
                continue
            leader = views[master].myself
            master_id = leader.node_id if leader is not None else ""
            in_sync = [
                node
                for node in shard.members
                if node != master
                and (me := views[node].myself) is not None
                and me.is_replica
                and me.master_id == master_id
                and _synced(conns, node)
            ]
            upgraded = [n for n in in_sync if n in shard.updated]
            others_first = [n for n in shard.restarting if n != master]
            if upgraded:
                heirs = upgraded
            elif others_first:
                held.add(index)
                continue
            elif in_sync:
                heirs = in_sync
            else:
                # No replica can take over (none configured, or none in sync): the master restarts
                # as is; with persistence on it keeps its data.
                continue
            resharder = Resharder(conns, options, {master_id: master})
            heir = resharder.hand_over(heirs, master)
            events.extend(resharder.notes)
            if heir is not None:
                events.append(("MasterFailedOver", f"{master} restarts next: its replica {heir} took over"))
            else:
                held.add(index)
                problems.extend(resharder.errors)
    return RestartPlan(frozenset(held), tuple(events), tuple(problems))


def _synced(conns: Connections, node: RedisNode) -> bool:
    try:
        return replication_state(conns.call(node, "ROLE")) == "connected"
    except TopologyError:
        return False
