"""Pure parsing and slot arithmetic for Redis Cluster topology.

Owns: splitting the 16384 slots across shards, slot ranges, and parsing the text replies of
CLUSTER NODES and CLUSTER INFO (Redis 7 formats). Must not: do I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SLOT_COUNT = 16384


@dataclass(frozen=True, order=True)
class SlotRange:
    """Slots ``start`` to ``end``, both included."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end < SLOT_COUNT:
            raise ValueError(f"invalid slot range {self.start}-{self.end}")

    @property
    def size(self) -> int:
        return self.end - self.start + 1

    def __str__(self) -> str:
        return str(self.start) if self.start == self.end else f"{self.start}-{self.end}"


def split_slots(shards: int) -> tuple[SlotRange, ...]:
    """Split the 16384 slots into ``shards`` contiguous ranges whose sizes differ by at most one.

    Range ``i`` ends just before ``i * 16384 / shards`` rounded half up, so the remainder is spread
    across the shards: 3 shards give 0-5460, 5461-10922, 10923-16383.
    """
    if not 1 <= shards <= SLOT_COUNT:
        raise ValueError(f"shards must be between 1 and {SLOT_COUNT}, got {shards}")
    bounds = [(2 * i * SLOT_COUNT + shards) // (2 * shards) for i in range(shards + 1)]
    return tuple(SlotRange(bounds[i], bounds[i + 1] - 1) for i in range(shards))


def ranges_of(slots: Iterable[int]) -> tuple[SlotRange, ...]:
    """Compress slot numbers into sorted contiguous ranges."""
    result: list[SlotRange] = []
    start = prev = -2
    for slot in sorted(set(slots)):
        if slot != prev + 1:
            if start >= 0:
                result.append(SlotRange(start, prev))
            start = slot
        prev = slot
    if start >= 0:
        result.append(SlotRange(start, prev))
    return tuple(result)


@dataclass(frozen=True)
class ClusterNodeEntry:
    """One line of CLUSTER NODES: a node as seen by the node that answered."""

    node_id: str
    address: str
    flags: frozenset[str]
    master_id: str
    config_epoch: int
    link_state: str
    slots: tuple[SlotRange, ...] = ()
    hostname: str = ""
    # Open slots, only on the line flagged myself: (slot, node id) migrating to / importing from.
    migrating: tuple[tuple[int, str], ...] = ()
    importing: tuple[tuple[int, str], ...] = ()

    @property
    def name(self) -> str:
        """The address when the node has one, else its id."""
        return self.address or self.node_id

    @property
    def is_myself(self) -> bool:
        return "myself" in self.flags

    @property
    def is_master(self) -> bool:
        return "master" in self.flags

    @property
    def is_replica(self) -> bool:
        return "slave" in self.flags

    @property
    def is_failed(self) -> bool:
        return "fail" in self.flags

    @property
    def is_suspected(self) -> bool:
        return "fail?" in self.flags

    @property
    def is_ghost(self) -> bool:
        """An entry that no longer stands for a working member: failed, address unknown, or stuck
        in handshake."""
        return bool(self.flags & {"fail", "noaddr", "handshake"})

    @property
    def is_known(self) -> bool:
        """A settled member: handshake finished and an address known."""
        return not self.flags & {"handshake", "noaddr"}

    def elsewhere(self, address: str) -> bool:
        """No address known (``noaddr``), or another one than ``address`` (``ip:port``)."""
        return "noaddr" in self.flags or (bool(self.address) and self.address != address)

    @property
    def slot_count(self) -> int:
        return sum(r.size for r in self.slots)


def parse_cluster_nodes(text: str) -> tuple[ClusterNodeEntry, ...]:
    """Parse the text reply of CLUSTER NODES (Redis 7: ``ip:port@cport[,hostname]``).

    Slot migration markers (``[slot->-id]``, ``[slot-<-id]``) are not ownership: they go into
    ``migrating`` and ``importing``.
    Raises ``ValueError`` naming the line when a line does not have the documented shape.
    """
    entries: list[ClusterNodeEntry] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) < 8:
            raise ValueError(f"CLUSTER NODES line has {len(parts)} fields, expected at least 8: {line!r}")
        node_id, addr_field, flags_field, master, _ping, _pong, epoch, link = parts[:8]
        addr, _, rest = addr_field.partition("@")
        _cport, _, hostname = rest.partition(",")
        if addr.startswith(":"):  # ":0" -- no address known yet
            addr = ""
        try:
            slots = tuple(_parse_slot(token) for token in parts[8:] if not token.startswith("["))
            migrating, importing = _open_slots(t for t in parts[8:] if t.startswith("["))
            config_epoch = int(epoch)
        except ValueError as err:
            raise ValueError(f"CLUSTER NODES line is malformed ({err}): {line!r}") from err
        entries.append(
            ClusterNodeEntry(
                node_id=node_id,
                address=addr,
                flags=frozenset(flags_field.split(",")),
                master_id="" if master == "-" else master,
                config_epoch=config_epoch,
                link_state=link,
                slots=slots,
                hostname=hostname,
                migrating=migrating,
                importing=importing,
            )
        )
    return tuple(entries)


def _open_slots(tokens: Iterable[str]) -> tuple[tuple[tuple[int, str], ...], tuple[tuple[int, str], ...]]:
    migrating: list[tuple[int, str]] = []
    importing: list[tuple[int, str]] = []
    for token in tokens:
        body = token.strip("[]")
        for marker, into in (("->-", migrating), ("-<-", importing)):
            slot, sep, node = body.partition(marker)
            if sep:
                into.append((int(slot), node))
                break
        else:
            raise ValueError(f"unknown slot marker {token!r}")
    return tuple(migrating), tuple(importing)


def _parse_slot(token: str) -> SlotRange:
    start, sep, end = token.partition("-")
    return SlotRange(int(start), int(end) if sep else int(start))


@dataclass(frozen=True)
class ClusterInfo:
    """The fields of CLUSTER INFO that topology decisions use."""

    state: str
    slots_assigned: int = 0
    slots_ok: int = 0
    slots_pfail: int = 0
    slots_fail: int = 0
    known_nodes: int = 0
    size: int = 0
    current_epoch: int = 0
    my_epoch: int = 0
    # Failover auth requests this node sent since it started (one per node asked, each election).
    auth_requests_sent: int = 0


def parse_cluster_info(text: str) -> ClusterInfo:
    """Parse the ``key:value`` lines of CLUSTER INFO; ``cluster_state`` is required."""
    fields: dict[str, str] = {}
    for raw in text.splitlines():
        key, sep, value = raw.strip().partition(":")
        if sep:
            fields[key] = value
    if "cluster_state" not in fields:
        raise ValueError("CLUSTER INFO reply has no cluster_state field")

    def number(key: str) -> int:
        try:
            return int(fields.get(key, "0"))
        except ValueError as err:
            raise ValueError(f"CLUSTER INFO field {key} is not a number: {fields[key]!r}") from err

    return ClusterInfo(
        state=fields["cluster_state"],
        slots_assigned=number("cluster_slots_assigned"),
        slots_ok=number("cluster_slots_ok"),
        slots_pfail=number("cluster_slots_pfail"),
        slots_fail=number("cluster_slots_fail"),
        known_nodes=number("cluster_known_nodes"),
        size=number("cluster_size"),
        current_epoch=number("cluster_current_epoch"),
        my_epoch=number("cluster_my_epoch"),
        auth_requests_sent=number("cluster_stats_messages_auth-req_sent"),
    )


def replication_state(role_reply: object) -> str:
    """The replication link state from a ROLE reply: ``connected`` once a replica has synced.

    A replica answers ``[b"slave", host, port, state, offset]`` with state ``connect``,
    ``connecting``, ``sync`` or ``connected``; a master answers ``master``; anything else is
    ``unknown``.
    """
    if not isinstance(role_reply, list | tuple) or not role_reply:
        return "unknown"
    parts = [p.decode() if isinstance(p, bytes) else p for p in role_reply]
    if parts[0] == "master":
        return "master"
    if parts[0] == "slave" and len(parts) >= 4 and isinstance(parts[3], str):
        return parts[3]
    return "unknown"
