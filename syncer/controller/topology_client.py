"""redis-py connections for topology management: one client per node, errors named by node.

Owns: opening (with the options' password and socket timeouts, no retries), running one CLUSTER
command and translating redis-py errors into ``TopologyError``; reading one node's view. Must not:
change the cluster on its own or retry behind the caller's back.
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from syncer.controller.topology_model import NodeView, RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_parse import parse_cluster_info, parse_cluster_nodes


class Connections:
    """One redis-py client per node, made on first use; all closed by ``close``."""

    def __init__(self, options: TopologyOptions) -> None:
        self._options = options
        self._clients: dict[RedisNode, redis.Redis] = {}

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
        try:
            # redis-py leaves execute_command unannotated; callers check the reply's shape.
            reply: object = self._client(node).execute_command(*args)  # type: ignore[no-untyped-call]
        except redis.AuthenticationError as err:
            raise TopologyError(str(node), f"authentication failed: {err}") from err
        except redis.ConnectionError as err:
            raise TopologyError(str(node), f"unreachable: {err}", unreachable=True) from err
        except redis.TimeoutError as err:
            message = f"unreachable: no answer to {command} within {self._options.timeout}s ({err})"
            raise TopologyError(str(node), message, unreachable=True) from err
        except redis.RedisError as err:
            raise TopologyError(str(node), f"{command}: {err}") from err
        return reply

    def _client(self, node: RedisNode) -> redis.Redis:
        client = self._clients.get(node)
        if client is None:
            opts = self._options
            client = redis.Redis(
                host=node.host,
                port=node.port,
                username=opts.username,
                password=opts.password,
                socket_timeout=opts.timeout,
                socket_connect_timeout=opts.timeout,
                retry=Retry(NoBackoff(), 0),
                decode_responses=True,
                single_connection_client=True,
            )
            self._clients[node] = client
        return client

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()


def observe(conns: Connections, node: RedisNode) -> NodeView:
    try:
        info = parse_cluster_info(conns.run(node, "CLUSTER", "INFO"))
        entries = parse_cluster_nodes(conns.run(node, "CLUSTER", "NODES"))
    except TopologyError as err:
        return NodeView(node, error=str(err), unreachable=err.unreachable)
    except ValueError as err:
        return NodeView(node, error=f"{node}: {err}")
    return NodeView(node, info=info, entries=entries)
