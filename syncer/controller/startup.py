"""What redis-server said when it refused to start. Pure: pod bodies in, a StallCause or None out.

The Redis container runs with ``terminationMessagePolicy: FallbackToLogsOnError``, so when
redis-server exits with an error the kubelet keeps the last lines it printed in the container's
status (``lastState.terminated.message`` while it waits to be restarted). A redis.conf that the
image's Redis does not accept (an unknown directive, a wrong value) makes redis-server print
``*** FATAL CONFIG FILE ERROR`` with the offending line and why, then exit; the pod crash-loops. That
is reported as ``RedisConfigRejected`` with redis-server's own lines, not as pods that are not Ready:
no waiting fixes it, only a change of ``spec.redisConfig`` (or of the version) does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from syncer.controller.model import ClusterSpec
from syncer.controller.status import StallCause

REDIS_CONTAINER = "redis"
FATAL_CONFIG = "FATAL CONFIG FILE ERROR"
REASON = "RedisConfigRejected"


def _failure(container: Mapping[str, Any]) -> str:
    """The termination message of a container that is not running now and last ended in error."""
    if "running" in (container.get("state") or {}):
        return ""
    for where in ("state", "lastState"):
        terminated = (container.get(where) or {}).get("terminated") or {}
        if terminated.get("exitCode") not in (None, 0):
            return str(terminated.get("message") or "")
    return ""


def _said(message: str) -> str:
    """redis-server's own lines from ``*** FATAL CONFIG FILE ERROR`` on: the version, where, the
    directive (``>>> '...'``) and why, joined with `` / ``."""
    lines = [line.strip() for line in message.splitlines()]
    start = next(i for i, line in enumerate(lines) if FATAL_CONFIG in line)
    return " / ".join(line for line in lines[start : start + 6] if line)


def _directive(said: str) -> str:
    """The directive name of the ``>>> 'name args'`` line, or ``""``."""
    marker = said.find(">>> '")
    if marker < 0:
        return ""
    words = said[marker + 5 :].split()
    return words[0].strip("'\"") if words else ""


def config_rejection(spec: ClusterSpec, pods: Iterable[Mapping[str, Any]]) -> StallCause | None:
    """The problem of the first pod (by name) whose redis-server refused its redis.conf, or None."""
    found: list[tuple[str, str]] = []
    for pod in pods:
        name = str((pod.get("metadata") or {}).get("name", ""))
        for container in (pod.get("status") or {}).get("containerStatuses") or ():
            if container.get("name") != REDIS_CONTAINER:
                continue
            message = _failure(container)
            if FATAL_CONFIG in message:
                found.append((name, _said(message)))
    if not found:
        return None
    name, said = min(found)
    directive = _directive(said)
    origin = ""
    if directive in {key for key, _ in spec.redis_config}:
        origin = f" (the directive comes from spec.redisConfig.{directive})"
    others = f"; {len(found) - 1} more pod(s) alike" if len(found) > 1 else ""
    message = f"redis-server in pod {spec.namespace}/{name} refused its redis.conf{origin}: {said}{others}"
    return StallCause(REASON, message)
