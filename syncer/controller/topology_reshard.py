"""Live changes to a formed Redis Cluster through redis-py: move slots with their keys, close open
slots, fail a master over, forget nodes.

A slot moves the way ``redis-cli --cluster reshard`` moves it: CLUSTER SETSLOT IMPORTING on the
target, SETSLOT MIGRATING on the source, then the keys in MIGRATE batches (``KEYS`` form, each
batch sent together with the next CLUSTER GETKEYSINSLOT in one round trip, keys kept as bytes),
then SETSLOT NODE on the target and the source as soon as the slot's last keys moved, and on every
other master once per group. Every step can be interrupted:
``close_open_slot`` finishes or rolls back what a crash left open. MIGRATE never uses REPLACE: a key
is on exactly one side during a migration, so a BUSYKEY reply means something else wrote it and the
move stops with an error instead of overwriting.

Must not: delete keys, forget a node that still serves slots, or fail over without the master's
agreement (no FORCE/TAKEOVER); every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from syncer.controller.elections import ELECTIONS, heir_order, heir_wait
from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_parse import ClusterNodeEntry, parse_cluster_nodes, replication_state
from syncer.controller.topology_plan import Move, SlotFix

# Redis drops a manual failover it could not complete in five seconds; ask again after this long.
MANUAL_FAILOVER_WINDOW = 6.0

FAILOVER_AUTH_WINDOW = "FailoverAuthWindow"
"""The reason of the Event that tells a failover waited for, or went around, Redis' election window."""


class Resharder:
    """Commands that change a formed cluster; ``actions`` records each change, ``errors`` each failure,
    ``notes`` (reason, message) what Kubernetes Events should tell (a failover waited or another heir
    chosen).

    ``masters`` maps the id of every master that answers to its address.
    """

    def __init__(
        self, conns: Connections, options: TopologyOptions, masters: Mapping[str, RedisNode]
    ) -> None:
        self.conns = conns
        self.options = options
        self.masters = dict(masters)
        self.actions: list[str] = []
        self.errors: list[str] = []
        self.notes: list[tuple[str, str]] = []
        self.keys_moved = 0

    def _run(self, node: RedisNode, *args: str | int) -> None:
        self.conns.run(node, *args)
        self.actions.append(f"{node}: {' '.join(str(a) for a in args)}")

    # -- slots -----------------------------------------------------------------------------------

    def move_group(self, source_id: str, target_id: str, slots: Sequence[int]) -> bool:
        """Move ``slots`` (all from one source to one target) with their keys; False on failure.

        IMPORTING on the target and MIGRATING (with the first key listing) on the source are one
        pipelined round trip per node for the whole group; then the keys, and each slot is bound
        (SETSLOT NODE on the target, then the source) as soon as its last keys moved, so a key is
        asked for (ASK) only while its own slot moves, not while the whole group does. The other
        masters are told once for the group.
        """
        source, target = self.masters[source_id], self.masters[target_id]
        try:
            self._each(target, [("CLUSTER", "SETSLOT", s, "IMPORTING", source_id) for s in slots])
            opened = self.conns.pipeline(
                source,
                [
                    *(("CLUSTER", "SETSLOT", s, "MIGRATING", target_id) for s in slots),
                    *(self._listing(s) for s in slots),
                ],
            )
            pending = {s: _keys(reply) for s, reply in zip(slots, opened[len(slots) :], strict=True)}
            self.keys_moved += self._migrate(source, target, pending, bind_to=target_id)
            self._tell_others(slots, target_id, (target, source))
        except TopologyError as err:
            self.errors.append(f"moving slots {slots[0]}-{slots[-1]} from {source} to {target}: {err}")
            return False
        return True

    def move_all(
        self,
        moves: Sequence[Move],
        stop: Callable[[], bool] = lambda: False,
        progress: Callable[[int, int], None] = lambda done, total: None,
        slotless: Iterable[str] = (),
    ) -> int:
        """Move slots in order, in groups of ``slot_group`` per source and target, until a group fails
        or ``stop`` says so; the number of slots moved. ``progress(moved, total)`` is told before the
        first group and after each one.

        A target in ``slotless`` (masters serving no slot yet) first gets one slot alone: clients
        learn masters from CLUSTER SLOTS, which lists only masters that serve a slot, and some
        (redis-py) fail a command an ASK sends to a master they do not know. Alone, that first slot
        is asked for only while its own few keys move; after it, the target is in every client's
        next map."""
        done = 0
        progress(0, len(moves))
        for (source, target), group in _groups(moves, self.options.slot_group, slotless):
            if stop() or not self.move_group(source, target, group):
                break
            done += len(group)
            progress(done, len(moves))
        if done:
            self.actions.append(f"moved {done} slot(s) and {self.keys_moved} key(s)")
        return done

    def _each(self, node: RedisNode, commands: Sequence[Sequence[str | int]]) -> None:
        if commands:
            self.conns.pipeline(node, commands)

    def _listing(self, slot: int) -> tuple[str, str, int, int]:
        return ("CLUSTER", "GETKEYSINSLOT", slot, self.options.migrate_batch)

    def migrate_keys(self, source: RedisNode, target: RedisNode, slot: int) -> int:
        """MIGRATE every key of ``slot`` from ``source`` to ``target`` until a listing comes back
        empty (the source need not be MIGRATING here); the count moved."""
        moved = 0
        while True:
            listed = _keys(self.conns.pipeline(source, [self._listing(slot)])[0])
            if not listed:
                return moved
            moved += self._migrate(source, target, {slot: listed})

    def _migrate(
        self,
        source: RedisNode,
        target: RedisNode,
        pending: dict[int, list[bytes]],
        bind_to: str = "",
    ) -> int:
        """MIGRATE the listed keys of several slots until no slot has a key left.

        MIGRATE takes keys of one slot, so each round pipelines one MIGRATE per slot (at most
        ``migrate_depth`` of them and ``migrate_batch`` keys in the round, so the source, which runs
        a round's MIGRATEs back to back, is never blocked long) followed by the next listing of each
        slot it touched. With ``bind_to`` (the target's id) a slot whose last keys a round moved (or
        that had none) is bound at once: SETSLOT NODE on the target, then on the source at the head
        of the source's next round trip.
        """
        to_source: list[tuple[str, str, int, str, str]] = []

        def finished(slots: list[int]) -> None:
            if bind_to and slots:
                self._each(target, [("CLUSTER", "SETSLOT", s, "NODE", bind_to) for s in slots])
                to_source.extend(("CLUSTER", "SETSLOT", s, "NODE", bind_to) for s in slots)

        finished([slot for slot, keys in pending.items() if not keys])
        pending = {slot: keys for slot, keys in pending.items() if keys}
        moved = 0
        while pending:
            touched: list[int] = []
            total = 0
            for slot, keys in pending.items():
                full = total + len(keys) > self.options.migrate_batch
                if touched and (full or len(touched) >= self.options.migrate_depth):
                    break
                touched.append(slot)
                total += len(keys)
            migrates = [self._migrate_command(target, pending[slot]) for slot in touched]
            # Once a slot is MIGRATING, keys the source lacks are created on the target (ASK), so a
            # listing shorter than a batch was the slot's last: no need to list it again.
            relist = [s for s in touched if len(pending[s]) >= self.options.migrate_batch]
            head, to_source[:] = list(to_source), []
            replies = self.conns.pipeline(source, [*head, *migrates, *(self._listing(s) for s in relist)])
            replies = replies[len(head) :]
            moved += total
            done = [slot for slot in touched if slot not in relist]
            for slot, reply in zip(relist, replies[len(touched) :], strict=True):
                following = _keys(reply)
                if following and following[0] in pending[slot]:
                    raise TopologyError(str(source), f"MIGRATE of slot {slot} to {target} moved nothing")
                if following:
                    pending[slot] = following
                else:
                    done.append(slot)
            for slot in done:
                del pending[slot]
            finished(done)
        if to_source:
            self._also_bind(source, to_source)
        return moved

    def _migrate_command(self, target: RedisNode, keys: Sequence[bytes]) -> list[str | int | bytes]:
        return [
            "MIGRATE", target.host, target.port, "", 0, self.options.migrate_timeout,
            *self._auth(), "KEYS", *keys,
        ]  # fmt: skip

    def _auth(self) -> list[str]:
        opts = self.options
        if opts.password is None:
            return []
        if opts.username:
            return ["AUTH2", opts.username, opts.password]
        return ["AUTH", opts.password]

    def bind(self, slots: Sequence[int], owner: str, first: Iterable[RedisNode] = ()) -> None:
        """SETSLOT NODE ``owner`` for ``slots`` on the owner, then on ``first``, then on the other
        masters (one pipelined round trip per node)."""
        order = [self.masters[owner], *first]
        self._bind_on(slots, owner, order)
        self._tell_others(slots, owner, order)

    def _bind_on(self, slots: Sequence[int], owner: str, order: Sequence[RedisNode]) -> None:
        """SETSLOT NODE ``owner`` for ``slots`` on the owner (``order[0]``, which must accept: it
        bumps its config epoch), then on the rest of ``order``, in turn (``_also_bind``)."""
        commands = [("CLUSTER", "SETSLOT", s, "NODE", owner) for s in slots]
        self._each(order[0], commands)
        for node in order[1:]:
            if node != order[0]:
                self._also_bind(node, commands)

    def _also_bind(self, node: RedisNode, commands: Sequence[Sequence[str | int]]) -> None:
        """Send SETSLOT NODE commands to a master after the owner took them. A source that gave
        its last slot away may refuse: it learns the owner from the owner's gossip and turns replica
        of it (replica migration), holding nothing of these slots."""
        try:
            self._each(node, commands)
        except TopologyError as err:
            if "only with masters" not in str(err):
                raise

    def _tell_others(self, slots: Sequence[int], owner: str, told: Sequence[RedisNode]) -> None:
        """SETSLOT NODE on every master not in ``told``; one that refuses (it just turned replica)
        or does not answer learns the owner from gossip: the owner's config epoch was bumped."""
        commands = [("CLUSTER", "SETSLOT", s, "NODE", owner) for s in slots]
        for node in self.masters.values():
            if node not in told:
                with contextlib.suppress(TopologyError):
                    self._each(node, commands)

    def count_keys(self, slot: int) -> dict[str, int]:
        """Keys of ``slot`` on every master that answers."""
        found: dict[str, int] = {}
        for node_id, node in self.masters.items():
            try:
                reply = self.conns.call(node, "CLUSTER", "COUNTKEYSINSLOT", slot)
            except TopologyError:
                continue
            found[node_id] = int(reply) if isinstance(reply, int | str) else 0
        return found

    def close_open_slot(self, fix: SlotFix, keys: Mapping[str, int]) -> bool:
        """Carry out ``fix``: move stray keys to the target and bind the slot there, or roll back."""
        try:
            if fix.rollback:
                for node in self.masters.values():
                    self.conns.run(node, "CLUSTER", "SETSLOT", fix.slot, "STABLE")
                self.actions.append(f"slot {fix.slot}: open migration rolled back")
                return True
            target = self.masters[fix.target]
            for holder, count in keys.items():
                if holder != fix.target and count > 0:
                    self.keys_moved += self.migrate_keys(self.masters[holder], target, fix.slot)
            self.bind([fix.slot], fix.target)
            for node in self.masters.values():
                self.conns.run(node, "CLUSTER", "SETSLOT", fix.slot, "STABLE")
        except TopologyError as err:
            self.errors.append(f"closing open slot {fix.slot}: {err}")
            return False
        self.actions.append(f"slot {fix.slot}: open migration finished on {self.masters[fix.target]}")
        return True

    # -- nodes -----------------------------------------------------------------------------------

    def hand_over(self, candidates: Sequence[RedisNode], master: RedisNode) -> RedisNode | None:
        """Fail ``master`` over to one of ``candidates`` (its replicas, preferred first): the first
        one Redis would elect now, else the one whose failover-auth window ends first, once it has
        (``elections``: a CLUSTER FAILOVER inside the window pauses the master's writes for nothing).
        The heir, or None when none took over; a wait or another choice is told in ``notes``."""
        order, note = heir_order(self.conns, candidates, master, time.monotonic())
        if note:
            self.notes.append((FAILOVER_AUTH_WINDOW, note))
        for heir in order:
            now = heir_wait(self.conns, heir.node, master, time.monotonic())
            if now.wait > 0:
                told = f"waited {now.wait:.1f}s before asking {heir.node} to take over from {master}"
                self.notes.append(
                    (FAILOVER_AUTH_WINDOW, f"{told}: Redis would have refused its election ({now.why})")
                )
                time.sleep(now.wait)
            if self.failover(heir.node, master):
                return heir.node
        return None

    def failover(self, replica: RedisNode, master: RedisNode) -> bool:
        """Make ``replica`` the master of its shard in place of ``master`` without losing a write.

        CLUSTER FAILOVER (never FORCE/TAKEOVER) is coordinated: the master pauses its clients until
        the replica has processed its whole replication stream, then the replica is elected. Redis
        ignores the request while the master does not yet list the replica as its own (right after a
        failover or a REPLICATE, gossip lags) and drops a manual failover it could not finish within
        five seconds, without a word. So the replica is asked only once both agree and its link is
        up, and asked again after a silent time-out, until ``failover_timeout``. Each request is
        recorded as an election (``elections.ELECTIONS``).
        """
        deadline = time.monotonic() + self.options.failover_timeout
        last = "no attempt"
        while time.monotonic() < deadline:
            last = self._not_ready(replica, master)
            if last:
                time.sleep(self.options.poll_interval)
                continue
            try:
                ids = [self.conns.run(node, "CLUSTER", "MYID").strip() for node in (replica, master)]
                self._run(replica, "CLUSTER", "FAILOVER")
            except TopologyError as err:
                last = str(err)
                time.sleep(self.options.poll_interval)
                continue
            ELECTIONS.asked(ids[0], ids[1], time.monotonic())
            attempt_end = min(deadline, time.monotonic() + MANUAL_FAILOVER_WINDOW)
            while time.monotonic() < attempt_end:
                if self._role(replica) == "master":
                    return True
                time.sleep(self.options.poll_interval)
            last = "the manual failover did not complete"
        self.errors.append(
            f"{replica} did not take over from {master} within {self.options.failover_timeout}s: {last}"
        )
        return False

    def _role(self, node: RedisNode) -> str:
        try:
            return replication_state(self.conns.call(node, "ROLE"))
        except TopologyError:
            return "unknown"

    def _not_ready(self, replica: RedisNode, master: RedisNode) -> str:
        """Why ``replica`` cannot take over from ``master`` right now, or "" when it can: both see it
        as the master's replica and its replication link is up."""
        try:
            mine = _myself(self.conns.run(replica, "CLUSTER", "NODES"))
            theirs = parse_cluster_nodes(self.conns.run(master, "CLUSTER", "NODES"))
        except TopologyError as err:
            return str(err)
        boss = next((e for e in theirs if e.is_myself), None)
        if mine is None or boss is None:
            return "a node does not list itself"
        if not boss.is_master or not mine.is_replica or mine.master_id != boss.node_id:
            return f"{replica} does not follow {master}"
        seen = next((e for e in theirs if e.node_id == mine.node_id), None)
        if seen is None or not seen.is_replica or seen.master_id != boss.node_id:
            return f"{master} does not list {replica} as its replica yet"
        state = self._role(replica)
        if state != "connected":
            return f"{replica} is not in sync with {master} (link {state})"
        return ""

    def forget(self, node_id: str, on: Sequence[RedisNode]) -> bool:
        """CLUSTER FORGET ``node_id`` on every node of ``on`` (one that does not know it is fine)."""
        ok = True
        for node in on:
            try:
                self._run(node, "CLUSTER", "FORGET", node_id)
            except TopologyError as err:
                if "Unknown node" in str(err):
                    continue
                self.errors.append(f"forgetting {node_id}: {err}")
                ok = False
        return ok


def _myself(nodes: str) -> ClusterNodeEntry | None:
    return next((e for e in parse_cluster_nodes(nodes) if e.is_myself), None)


def _keys(reply: object) -> list[bytes]:
    if not isinstance(reply, list):
        raise TopologyError("-", f"CLUSTER GETKEYSINSLOT: unexpected reply {reply!r}")
    return [k if isinstance(k, bytes) else str(k).encode() for k in reply]


def _groups(
    moves: Sequence[Move], size: int, slotless: Iterable[str] = ()
) -> Iterator[tuple[tuple[str, str], list[int]]]:
    """Consecutive moves of one source and target, at most ``size`` slots per group; the first group
    of a target in ``slotless`` has one slot."""
    group: list[int] = []
    pair = ("", "")
    first = set(slotless)
    for move in moves:
        limit = 1 if pair[1] in first else size
        if group and ((move.source, move.target) != pair or len(group) >= limit):
            first.discard(pair[1])
            yield pair, group
            group = []
        pair = (move.source, move.target)
        group.append(move.slot)
    if group:
        yield pair, group
