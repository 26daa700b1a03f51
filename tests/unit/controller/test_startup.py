"""The redis-server refusal read from pod statuses (the kubelet's termination message)."""

from __future__ import annotations

from typing import Any

from syncer.controller.model import ClusterSpec
from syncer.controller.startup import REASON, config_rejection

SPEC = ClusterSpec(
    name="cache",
    namespace="ns",
    uid="u",
    generation=1,
    version="7.2",
    redis_config=(("maxmemory-polcy", "allkeys-lru"),),
)
# The shape redis-server prints a fatal redis.conf error in (see the integration test for the real one).
FATAL = """
*** FATAL CONFIG FILE ERROR (Redis 7.2.4) ***
Reading the configuration file, at line 8
>>> 'maxmemory-polcy "allkeys-lru"'
Bad directive or wrong number of arguments
"""


def pod(name: str, state: dict[str, Any], last: dict[str, Any] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "redis", "state": state}
    if last is not None:
        container["lastState"] = last
    return {"metadata": {"name": name}, "status": {"containerStatuses": [container]}}


def failed(message: str, code: int = 1) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": "Error", "message": message}}


WAITING = {"waiting": {"reason": "CrashLoopBackOff"}}


def test_a_crash_looping_server_is_reported_with_its_own_lines_and_the_spec_key() -> None:
    problem = config_rejection(SPEC, [pod("cache-shard-0-0", WAITING, failed("boot\n" + FATAL))])

    assert problem is not None
    assert problem.reason == REASON
    assert problem.message == (
        "redis-server in pod ns/cache-shard-0-0 refused its redis.conf (the directive comes from"
        " spec.redisConfig.maxmemory-polcy): *** FATAL CONFIG FILE ERROR (Redis 7.2.4) *** / Reading the"
        " configuration file, at line 8 / >>> 'maxmemory-polcy \"allkeys-lru\"' / Bad directive or wrong"
        " number of arguments"
    )


def test_the_first_pod_by_name_is_named_and_the_others_counted() -> None:
    pods = [pod(f"cache-shard-{i}-0", failed(FATAL)) for i in (2, 0, 1)]
    problem = config_rejection(SPEC, pods)

    assert problem is not None
    assert "pod ns/cache-shard-0-0 " in problem.message
    assert problem.message.endswith("; 2 more pod(s) alike")


def test_nothing_is_reported_for_a_running_server_other_failures_or_other_containers() -> None:
    running = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    exporter = {"name": "exporter", "state": failed(FATAL)}
    cases = [
        pod("recovered", running, failed(FATAL)),  # restarted fine since: the old failure is history
        pod("oom", WAITING, failed("Killed", 137)),
        pod("clean-exit", failed(FATAL, 0)),
        {"metadata": {"name": "exporter"}, "status": {"containerStatuses": [exporter]}},
        {"metadata": {"name": "pending"}, "status": {}},
    ]
    for case in cases:
        assert config_rejection(SPEC, [case]) is None, case
