"""One pass that brings a Redis Cluster to the shape a RedisCluster asks for, without losing a key.

``converge(layout, departing, options)`` runs, in this order, only what is needed:

0. judges kept nodes that came back with a volume of another shape (``topology_volumes``): each is
   emptied and reset before it is met, or left out with a reason (``refused``) and nothing else done;
1. closes slots a crash left open (``--cluster fix`` style: finish a migration whose target
   answers, roll back an import nothing was moved for);
2. forgets ghost entries (failed, ``noaddr`` or handshake entries that serve no slot and are no
   current pod's node, e.g. a pod that came back on another pod's former IP);
3. fails masters that are leaving over to a kept replica of their own;
4. forms the kept shards (``topology.Formation``: meet, replicate; slots only for a fresh cluster);
5. rebalances: departing masters give all their slots, kept masters end within one slot of even;
6. empties (``topology_volumes.wipe``) and forgets the departing nodes once they serve nothing, so
   a pod that comes back on the kept claim starts as a fresh node.

Each step is idempotent; a pass interrupted anywhere is completed by the next one. ``departed`` says
the departing pods may now be deleted; ``membership`` is which nodes the cluster counts as its own
once the pass is over (``topology_members``), from a last look at every node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace

from syncer.controller import topology
from syncer.controller.formation import FormationStep
from syncer.controller.topology_client import Connections, observe
from syncer.controller.topology_members import Membership, membership
from syncer.controller.topology_model import NodeView, RedisNode, TopologyOptions, TopologyReport
from syncer.controller.topology_plan import OpenSlot, balanced, fix_open_slot, plan_rebalance
from syncer.controller.topology_reshard import Resharder
from syncer.controller.topology_volumes import Returned, judge_returning, retire


@dataclass(frozen=True)
class ConvergeReport:
    """The cluster after one pass: the verdict, whether the departing pods may go, what happened.

    ``events`` are (reason, message) pairs for Kubernetes Events; ``problems`` are why a step could not
    be done (the caller decides whether that stalls).
    """

    report: TopologyReport
    departed: bool
    events: tuple[tuple[str, str], ...] = ()
    problems: tuple[str, ...] = ()
    keys_moved: int = 0
    refused: tuple[str, ...] = ()
    membership: Membership = field(default_factory=Membership)


Progress = Callable[[int, int], None]
"""Told (slots moved, slots to move) while a rebalance moves slots."""


def _untold(done: int, total: int) -> None:
    """Progress nobody listens to."""


@dataclass
class _Pass:
    conns: Connections
    options: TopologyOptions
    events: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    keys_moved: int = 0
    progress: Progress = _untold

    def views(self, nodes: Sequence[RedisNode]) -> dict[RedisNode, NodeView]:
        return {node: observe(self.conns, node) for node in nodes}

    def resharder(self, views: dict[RedisNode, NodeView]) -> Resharder:
        masters = {
            me.node_id: node
            for node, view in views.items()
            if (me := view.myself) is not None and me.is_master and not view.error
        }
        return Resharder(self.conns, self.options, masters)

    def finish(self, resharder: Resharder) -> None:
        self.problems.extend(resharder.errors)
        self.events.extend(resharder.notes)
        self.keys_moved += resharder.keys_moved


def converge(
    layout: Sequence[Sequence[RedisNode]],
    departing: Sequence[RedisNode] = (),
    options: TopologyOptions = TopologyOptions(),
    progress: Progress = _untold,
) -> ConvergeReport:
    """One converging pass over ``layout`` (per kept shard ``[pod 0, pod 1, ...]``) and ``departing``;
    ``progress`` is told how many slots have moved while a rebalance moves them."""
    kept = [node for shard in layout for node in shard]
    everyone = [*kept, *departing]
    with closing(Connections(options)) as conns:
        run = _Pass(conns, options, progress=progress)
        views = run.views(everyone)
        if any(v.error for v in views.values()) and starting(views.values()):
            views = _wait_started(run, everyone)
        if any(v.error for v in views.values()):
            # Nothing changes while a node does not answer: the verdict says which, and only the
            # nodes that answered are judged members or not.
            down = tuple(v.error for v in views.values() if v.error)
            report = topology.judge(list(views.values()), len(layout))
            return ConvergeReport(report, False, problems=down, membership=membership(views))
        options.told(FormationStep.SERVERS_ANSWER)
        result = _converge(run, views, layout, departing)
        return replace(result, membership=membership(run.views(everyone)))


def _converge(
    run: _Pass,
    views: dict[RedisNode, NodeView],
    layout: Sequence[Sequence[RedisNode]],
    departing: Sequence[RedisNode],
) -> ConvergeReport:
    """Steps 0 to 6 once every node answered (``views``)."""
    options = run.options
    kept = [node for shard in layout for node in shard]
    everyone = [*kept, *departing]
    judged = _judge_returning(run, views, kept)
    if judged.holding:
        # A node that could hold the only copy of some keys (or could not be read, or was judged
        # differently by two looks, or could not be emptied) is neither emptied nor met, and
        # nothing else changes in this pass.
        report = topology.inspect(kept, len(layout), options)
        events, problems = tuple(run.events), (*run.problems, *judged.refused)
        return ConvergeReport(report, False, events, problems, refused=judged.refused)
    if judged.emptied:
        views = run.views(everyone)
    if not _claims_agree(run, everyone):
        report = topology.inspect(kept, len(layout), options)
        return ConvergeReport(report, False, tuple(run.events), tuple(run.problems), run.keys_moved)
    _close_open_slots(run, views)
    _forget_ghosts(run, run.views(everyone), kept)
    if not _hand_over(run, run.views(everyone), layout, departing):
        # A shard whose master is leaving has none among its kept pods yet: forming it now would
        # point its replicas at each other. The next pass tries the hand-over again.
        report = topology.inspect(kept, len(layout), options)
        return ConvergeReport(report, False, tuple(run.events), tuple(run.problems), run.keys_moved)
    formed = topology.bootstrap(layout, options, settle=False)
    run.problems.extend(formed.errors)
    if formed.actions:
        run.events.append(("TopologyRepaired", f"{len(formed.actions)} command(s): {formed.actions[0]}"))
    departed = False
    if not formed.errors and _settled(run, kept):
        views = run.views(everyone)
        if _rebalance(run, views, layout, departing):
            departed = _detach(run, run.views(everyone), kept, departing)
    report = (
        topology.bootstrap(layout, options)
        if not run.problems
        else topology.inspect(kept, len(layout), options)
    )
    return ConvergeReport(report, departed, tuple(run.events), tuple(run.problems), run.keys_moved)


def starting(views: Iterable[NodeView]) -> bool:
    """A cluster being formed whose servers are still starting: every node that does not answer
    refuses the connection or times out (not an error of a server that answers), and every node
    that answers is fresh (it knows no other node and serves no slot). Pure."""
    found = list(views)
    silent = [v for v in found if v.error]
    answering = [v for v in found if not v.error]
    return (
        bool(silent)
        and all(v.unreachable for v in silent)
        and all(len(v.entries) <= 1 and not any(e.slots for e in v.entries) for v in answering)
    )


def _wait_started(run: _Pass, nodes: Sequence[RedisNode]) -> dict[RedisNode, NodeView]:
    """Look again every ``poll_interval`` until every node answers or ``start_timeout`` passed: the
    pods of a new cluster are up before their servers accept connections, and no Kubernetes event
    says when they do. The last look is returned."""
    deadline = time.monotonic() + run.options.start_timeout
    while True:
        views = run.views(nodes)
        if not any(v.error for v in views.values()) or time.monotonic() >= deadline:
            return views
        time.sleep(run.options.poll_interval)


def _wait_for(run: _Pass, problem: Callable[[], str]) -> bool:
    """Call ``problem`` until it returns "" (True) or ``ready_timeout`` runs out (False, with the last
    problem recorded): what gossip has not spread yet is waited for, not acted on."""
    deadline = time.monotonic() + run.options.ready_timeout
    while True:
        found = problem()
        if not found:
            return True
        if time.monotonic() >= deadline:
            run.problems.append(found)
            return False
        time.sleep(run.options.poll_interval)


def _settled(run: _Pass, nodes: Sequence[RedisNode]) -> bool:
    """Until every node says ``cluster_state:ok``: a node that just joined answers CLUSTERDOWN to a
    MIGRATE until it has taken the slot map in."""

    def waiting() -> str:
        views = run.views(nodes)
        late = [str(n) for n, v in views.items() if v.info is None or v.info.state != "ok"]
        return f"waiting for {late[0]} to say cluster_state ok before moving slots" if late else ""

    if not _wait_for(run, waiting):
        return False
    run.options.told(FormationStep.CLUSTER_OK)
    return True


def _judge_returning(run: _Pass, views: dict[RedisNode, NodeView], kept: Sequence[RedisNode]) -> Returned:
    """Empty and reset each kept node that came back with a volume of another shape."""
    found = judge_returning(run.conns, run.options, views, kept)
    run.problems.extend(found.problems)
    if found.emptied:
        told = "; ".join(found.emptied)
        message = f"emptied and reset before joining, as they came back from another shape: {told}"
        run.events.append(("ReturningNodesReset", message))
    return found


def _claims_agree(run: _Pass, nodes: Sequence[RedisNode]) -> bool:
    """Until no slot is claimed by two nodes' own views: right after a failover the old master still
    calls itself master of its slots until the new master's claim reaches it, and a pass that read
    that moment would take the wrong node for the shard's master."""

    def doubled() -> str:
        owners: dict[int, str] = {}
        for node, view in run.views(nodes).items():
            me = view.myself
            if me is None or not me.is_master:
                continue
            for r in me.slots:
                for slot in range(r.start, r.end + 1):
                    if owners.setdefault(slot, str(node)) != str(node):
                        claimants = f"{owners[slot]} and {node}"
                        return f"the masters do not agree yet: slot {slot} is claimed by {claimants}"
        return ""

    return _wait_for(run, doubled)


def _reference(views: dict[RedisNode, NodeView]) -> NodeView:
    readable = [v for v in views.values() if v.info is not None]
    return max(readable, key=lambda v: v.info.current_epoch if v.info is not None else -1)


def _close_open_slots(run: _Pass, views: dict[RedisNode, NodeView]) -> None:
    opened: dict[int, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
    for view in views.values():
        me = view.myself
        if me is None:
            continue
        for slot, to in me.migrating:
            opened.setdefault(slot, ([], []))[0].append((me.node_id, to))
        for slot, source in me.importing:
            opened.setdefault(slot, ([], []))[1].append((me.node_id, source))
    if not opened:
        return
    owners = {
        slot: entry.node_id
        for entry in _reference(views).entries
        for r in entry.slots
        for slot in range(r.start, r.end + 1)
        if slot in opened
    }
    resharder = run.resharder(views)
    closed = 0
    for slot, (migrating, importing) in sorted(opened.items()):
        open_slot = OpenSlot(slot, owners.get(slot, ""), tuple(migrating), tuple(importing))
        keys = resharder.count_keys(slot)
        try:
            fix = fix_open_slot(open_slot, keys, set(resharder.masters))
        except ValueError as err:
            run.problems.append(str(err))
            continue
        closed += resharder.close_open_slot(fix, keys)
    run.finish(resharder)
    if closed:
        message = f"closed {closed} open slot(s) left by an interrupted migration"
        run.events.append(("OpenSlotsFixed", message))


def _forget_ghosts(run: _Pass, views: dict[RedisNode, NodeView], kept: Sequence[RedisNode]) -> None:
    """Forget entries that stand for no pod and serve no slot: not a pod's id, and failed, noaddr or
    in handshake, or (every pod answered with its id) whatever Redis says of them: a pod back with a
    new id leaves its former one listed, unflagged until Redis' node timeout."""
    current = {me.node_id for v in views.values() if (me := v.myself) is not None}
    everyone = all(v.myself is not None for v in views.values())
    ghosts = {
        entry.node_id: entry.name
        for view in views.values()
        for entry in view.entries
        if (entry.is_ghost or everyone) and not entry.slots and entry.node_id not in current
    }
    if not ghosts:
        return
    resharder = run.resharder(views)
    gone = [name for node_id, name in ghosts.items() if resharder.forget(node_id, kept)]
    run.finish(resharder)
    if gone:
        message = f"forgot {len(gone)} stale node entry(ies): {', '.join(gone)}"
        run.events.append(("GhostNodesForgotten", message))


def _ids(views: dict[RedisNode, NodeView]) -> dict[RedisNode, str]:
    return {node: me.node_id for node, view in views.items() if (me := view.myself) is not None}


def _shard_masters(views: dict[RedisNode, NodeView], layout: Sequence[Sequence[RedisNode]]) -> list[str]:
    """The id of each kept shard's master: the member that is a master."""
    found: list[str] = []
    for shard in layout:
        masters = [me for n in shard if (me := views[n].myself) is not None and me.is_master]
        masters.sort(key=lambda me: -me.slot_count)
        found.append(masters[0].node_id if masters else "")
    return found


def _hand_over(
    run: _Pass,
    views: dict[RedisNode, NodeView],
    layout: Sequence[Sequence[RedisNode]],
    departing: Sequence[RedisNode],
) -> bool:
    """A departing master with a kept replica of its own fails over to it (replicas scaled down);
    False when one could not, so that nothing else changes in this pass."""
    ids = _ids(views)
    kept_replicas: dict[str, list[RedisNode]] = {}
    for shard in layout:
        for node in shard:
            if (me := views[node].myself) is not None and me.is_replica:
                kept_replicas.setdefault(me.master_id, []).append(node)
    resharder = run.resharder(views)
    ok = True
    handed: list[RedisNode] = []
    for node in departing:
        me = views[node].myself
        if me is None or not me.is_master or not me.slots or ids[node] not in kept_replicas:
            continue
        heir = resharder.hand_over(kept_replicas[ids[node]], node)
        if heir is None:
            ok = False
            continue
        handed.append(node)
        run.events.append(("MasterFailedOver", f"{node} is leaving: its replica {heir} took over"))
    run.finish(resharder)
    if ok and handed:
        ok = _agreed(run, [*views], {ids[node] for node in handed})
    return ok


def _agreed(run: _Pass, nodes: Sequence[RedisNode], former: set[str]) -> bool:
    """Until every node sees the ``former`` masters as replicas and each replica following a master:
    after a failover the old master and the other replicas of the shard switch to the new master one
    by one, and gossip spreads each switch."""

    def stray() -> str:
        found = [
            f"{view.node} sees {e.name} as {'master' if e.is_master else f'following {e.master_id}'}"
            for view in run.views(nodes).values()
            for masters in [{m.node_id for m in view.entries if m.is_master}]
            for e in view.entries
            if (e.node_id in former and e.is_master) or (e.is_replica and e.master_id not in masters)
        ]
        return f"after the failover: {found[0]}" if found else ""

    return _wait_for(run, stray)


def _rebalance(
    run: _Pass,
    views: dict[RedisNode, NodeView],
    layout: Sequence[Sequence[RedisNode]],
    departing: Sequence[RedisNode],
) -> bool:
    """Move slots until kept masters are even and departing ones hold none; True when that holds."""
    keep = _shard_masters(views, layout)
    if "" in keep:
        run.problems.append("a kept shard has no master yet: slots are not moved")
        return False
    owned: dict[str, list[int]] = {}
    for entry in _reference(views).entries:
        if entry.is_master and entry.slots:
            owned[entry.node_id] = [s for r in entry.slots for s in range(r.start, r.end + 1)]
    if balanced(owned, keep):
        return True
    resharder = run.resharder(views)
    missing = [m for m in owned if m not in resharder.masters]
    if missing:
        run.problems.append(f"master {missing[0]} serves slots but does not answer: slots are not moved")
        return False
    moves = plan_rebalance(owned, keep)
    leaving = {node_id for node, node_id in _ids(views).items() if node in departing}
    slotless = {m.target for m in moves} - set(owned)
    done = resharder.move_all(moves, progress=run.progress, slotless=slotless)
    run.finish(resharder)
    if done:
        drained = "departing masters drained, " if leaving & set(owned) else ""
        message = f"{drained}moved {done} slot(s) with {resharder.keys_moved} key(s) by live migration"
        run.events.append(("SlotsMigrated", message))
    return done == len(moves) and not resharder.errors


def _detach(
    run: _Pass,
    views: dict[RedisNode, NodeView],
    kept: Sequence[RedisNode],
    departing: Sequence[RedisNode],
) -> bool:
    """Empty every departing node that still belongs to the cluster (a master only once it holds no
    key: nothing may leave with it), then forget it everywhere. Emptied for good (data files
    rewritten, a new node id), its pod brings nothing back if its claim is kept and it returns."""
    if not departing:
        return True
    resharder = run.resharder(views)
    known = {e.node_id for node in kept for e in views[node].entries}
    ok = True
    forgotten: list[str] = []
    for node in departing:
        me = views[node].myself
        if me is None:
            ok = False
            continue
        if me.node_id not in known:
            continue
        if me.is_master and me.slots:
            run.problems.append(f"{node} is leaving but still serves {me.slot_count} slot(s)")
            ok = False
            continue
        problem = retire(run.conns, run.options, node, me.node_id)
        run.problems.extend([problem] if problem else [])
        if not problem and resharder.forget(me.node_id, kept):
            forgotten.append(str(node))
        else:
            ok = False
    run.finish(resharder)
    if forgotten:
        run.events.append(("NodesForgotten", f"removed {', '.join(forgotten)} from the cluster"))
    return ok
