"""redis-py connections for topology management: one client per node, errors named by node.

Owns: opening (with the options' password and socket timeouts, no retries), running one CLUSTER
command and translating redis-py errors into ``TopologyError``; reading one node's view (its own line
feeds the record of elections, ``elections.ELECTIONS``). Every command,
pipeline and new connection passes the options' fence: before a connection is made or made again,
once its socket is open and before its handshake (AUTH, HELLO, CLIENT SETNAME) is sent, and right
before the command is sent. A controller that lost its Lease sends nothing more (``FencedOut``), not
even a handshake, whichever of these steps it was frozen in.

The Redis side of the fence: a controller holding a Lease names each connection after the Lease and
its token (``client_name``), and on its first contact with a node it closes every connection of an
older token of the same Lease there (``CLIENT LIST`` and ``CLIENT KILL ID``). A connection is made
or made again only before the fence is asked, never between the question and the send, so a
deposed leader's command caught between the two goes out on a connection the new leader has closed
and is never run; one that arrived before the new leader's first contact was run before anything
the new leader does on that node, and the new leader reads the node after it. docs/topology.md says
what this does not cover.

Must not: change the cluster on its own or retry behind the caller's back.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from syncer.controller.elections import ELECTIONS
from syncer.controller.topology_model import NodeView, RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_parse import parse_cluster_info, parse_cluster_nodes
from syncer.errors import FencedOut
from syncer.leader.fence import Fence

CLIENT_PREFIX = "syncer-controller"


def client_name(fence: Fence) -> str | None:
    """The name of every connection of a controller holding a Lease: ``syncer-controller/<Lease
    namespace>/<Lease name>/<token>``; None when it holds none (token 0)."""
    return f"{CLIENT_PREFIX}/{fence.lease}/{fence.token}" if fence.token else None


# The nodes this process swept, per Lease and token: once is enough (see the module docstring).
_SWEPT: dict[tuple[str, int], set[RedisNode]] = {}
_SWEPT_LOCK = threading.Lock()


def _unswept(fence: Fence, node: RedisNode) -> bool:
    """Whether ``node`` is yet to be swept under ``fence``'s token."""
    with _SWEPT_LOCK:
        return bool(fence.token) and node not in _SWEPT.get((fence.lease, fence.token), set())


def _swept(fence: Fence, node: RedisNode) -> None:
    with _SWEPT_LOCK:
        _SWEPT.setdefault((fence.lease, fence.token), set()).add(node)


def superseded(name: str, fence: Fence) -> bool:
    """Whether a connection named ``name`` belongs to an older holder of ``fence``'s Lease."""
    prefix = f"{CLIENT_PREFIX}/{fence.lease}/"
    token = name[len(prefix) :] if name.startswith(prefix) else ""
    return bool(fence.token) and token.isdigit() and int(token) < fence.token


def _fenced_handshake(fence: Fence) -> Callable[[Any], None]:
    """Run by redis-py once a connection's socket is open, in place of its handshake (AUTH, HELLO,
    CLIENT SETNAME): the fence is asked first, so a process frozen while it connected sends not even
    the handshake when it runs again after losing its Lease."""

    def handshake(connection: Any) -> None:
        try:
            fence.check()
        except FencedOut:
            connection.disconnect()
            raise
        connection.on_connect()

    return handshake


class Connections:
    """One redis-py client per node, made on first use; all closed by ``close``."""

    def __init__(self, options: TopologyOptions) -> None:
        self._options = options
        self._clients: dict[RedisNode, redis.Redis] = {}
        self._raw: dict[RedisNode, redis.Redis] = {}

    def run(self, node: RedisNode, *args: str | int) -> str:
        """Run one command whose reply is text; failures become ``TopologyError``."""
        reply = self.call(node, *args)
        if isinstance(reply, bytes):
            return reply.decode()
        if not isinstance(reply, str):
            raise TopologyError(str(node), f"{' '.join(str(a) for a in args)}: unexpected reply {reply!r}")
        return reply

    def call(self, node: RedisNode, *args: str | int) -> object:
        """Run one command and return redis-py's reply as is; failures become ``TopologyError``."""
        command = " ".join(str(a) for a in args)
        with self._translated(node, command):
            client = self._client(node)
            if client.connection is not None:
                # Made again (after a failure) before the fence is asked for the send, never after it.
                self._options.fence.check()
                client.connection.connect()  # type: ignore[no-untyped-call]
            with self._options.fence.writing():
                # redis-py leaves execute_command unannotated; callers check the reply's shape.
                reply: object = client.execute_command(*args)  # type: ignore[no-untyped-call]
        return reply

    def pipeline(self, node: RedisNode, commands: Sequence[Sequence[str | int | bytes]]) -> list[object]:
        """Send ``commands`` in one round trip on the node's binary-safe connection (keys stay bytes).

        Every reply is returned in order; an error reply of any command becomes ``TopologyError``.
        """
        label = " + ".join(str(c[0]) for c in commands)
        with self._translated(node, label):
            client = self._client(node, raw=True)
            # Leaving the block gives the connection back to the pool, also when nothing was sent.
            with client.pipeline(transaction=False) as pipe:
                # Its connection, (re)connected before the fence is asked for the send, not after.
                self._options.fence.check()
                pipe.connection = client.connection_pool.get_connection()
                for command in commands:
                    pipe.execute_command(*command)  # type: ignore[no-untyped-call]
                with self._options.fence.writing():
                    replies: list[object] = pipe.execute()
        return replies

    @contextmanager
    def _translated(self, node: RedisNode, command: str) -> Iterator[None]:
        try:
            yield
        except redis.AuthenticationError as err:
            raise TopologyError(str(node), f"authentication failed: {err}") from err
        except redis.ConnectionError as err:
            raise TopologyError(str(node), f"unreachable: {err}", unreachable=True) from err
        except redis.TimeoutError as err:
            message = f"unreachable: no answer to {command} within {self._options.timeout}s ({err})"
            raise TopologyError(str(node), message, unreachable=True) from err
        except redis.RedisError as err:
            raise TopologyError(str(node), f"{command}: {err}") from err

    def _client(self, node: RedisNode, raw: bool = False) -> redis.Redis:
        """The node's client; a new one connects at once (its handshake is a command too, so it is
        fenced like one), and every command is fenced again right before it is sent. The first
        contact with a node closes the connections of the Lease's older holders there."""
        pool = self._raw if raw else self._clients
        client = pool.get(node)
        if client is None:
            self._options.fence.check()
            opts = self._options
            client = redis.Redis(
                host=node.host,
                port=node.port,
                username=opts.username,
                password=opts.password,
                socket_timeout=opts.timeout,
                socket_connect_timeout=opts.timeout,
                retry=Retry(NoBackoff(), 0),
                decode_responses=not raw,
                # The raw client only runs pipelines, which take their connection from the pool.
                single_connection_client=not raw,
                client_name=client_name(opts.fence),
                # redis-py calls it with the connection, whatever its annotation says.
                redis_connect_func=_fenced_handshake(opts.fence),  # type: ignore[arg-type]
                **opts.tls_arguments(),
            )
            pool[node] = client
        if raw:
            self._client(node)  # the first contact sweeps, through the text client
        elif _unswept(self._options.fence, node):
            self._sweep(node, client)
            _swept(self._options.fence, node)
        return client

    def _sweep(self, node: RedisNode, client: redis.Redis) -> None:
        """Close the connections of the Lease's older holders on ``node`` (a failure is the
        caller's: nothing is sent to a node not swept)."""
        fence = self._options.fence
        with self._options.fence.writing():
            listed = client.client_list(_type="normal")
        for found in listed:
            if superseded(str(found.get("name") or ""), fence):
                # Gone already (closed on its own) is as good as closed.
                with self._options.fence.writing(), contextlib.suppress(redis.ResponseError):
                    client.client_kill_filter(_id=found["id"])

    def close(self) -> None:
        for client in [*self._clients.values(), *self._raw.values()]:
            client.close()
        self._clients.clear()
        self._raw.clear()


def observe(conns: Connections, node: RedisNode) -> NodeView:
    try:
        info = parse_cluster_info(conns.run(node, "CLUSTER", "INFO"))
        entries = parse_cluster_nodes(conns.run(node, "CLUSTER", "NODES"))
    except TopologyError as err:
        return NodeView(node, error=str(err), unreachable=err.unreachable)
    except ValueError as err:
        return NodeView(node, error=f"{node}: {err}")
    me = next((e for e in entries if e.is_myself), None)
    if me is not None:
        ELECTIONS.observe(me, info.auth_requests_sent, time.monotonic())  # failover-auth windows
    return NodeView(node, info=info, entries=entries)
