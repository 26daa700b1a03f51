"""The RedisCluster specs that are refused, in one list, each with its reason. Pure.

The same list is used three times: the controller stalls on a refusal (``Stalled``/``InvalidSpec``
with the refusal's text), the controller's admission webhook denies a create or a spec change with
that text, and the chart's ValidatingAdmissionPolicy denies it too: its CEL rules are generated from
this list (``refusal_policy``), so the three cannot drift apart.

Each refusal judges the object as it would be (``new``) against the object as it is (``old``: the
stored object on an update, None on a create). The controller has no old version of the spec; it
passes the object itself, whose status says what the cluster runs. A refusal that needs the old spec
(storage that shrinks, fewer shards) cannot be judged by the controller (``controller`` False): the
apiserver or Redis meets such a change later, and admission is where it is refused. A downgrade is
admission's alone too: the controller carries out the version a rollback puts back, which a person
may also allow at admission with the annotation.

What the CRD's schema refuses (durations, line breaks in a redisConfig value, a rollout step with
both pods and percent) is not repeated here: the apiserver refuses it on every create and update.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from syncer.guards.functions import parse_quantity

ANNOTATION_ALLOW_DOWNGRADE = "redis.syncer.dev/allow-downgrade-to"
VERSION_PATTERN = r"^(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)([.](0|[1-9][0-9]*))?$"
CONFIG_KEY_PATTERN = r"^[a-z][a-z0-9-]*$"
# Directives the controller sets itself: overriding them would break the cluster it manages.
RESERVED_DIRECTIVES = (
    "bind", "cluster-announce-ip", "cluster-config-file", "cluster-enabled", "daemonize", "dir",
    "include", "logfile", "masterauth", "pidfile", "port", "requirepass", "tls-ca-cert-file",
    "tls-cert-file", "tls-cluster", "tls-key-file", "tls-port", "tls-replication",
)  # fmt: skip
# Directives a spec may state only with the value the controller sets, and why.
REQUIRED_VALUES = {
    "appendonly": (
        "yes",
        "without the append-only file a master whose container restarts in place comes back empty as "
        "the same node, before Redis fails it over, and its replicas copy the empty dataset",
    ),
}

Obj = Mapping[str, Any]
# Which requests admission judges (CEL, a matchCondition of the policy and of the webhook): creates,
# and updates that change the spec. Labels, annotations and finalizers never wait for a verdict.
SPEC_CHANGED = "request.operation == 'CREATE' || !has(oldObject.spec) || object.spec != oldObject.spec"


@dataclass(frozen=True)
class SpecRefusal:
    """One refused spec. ``check(new, old)`` gives the reason text, ``""`` when it does not apply;
    ``expression`` (CEL, true when allowed) and ``message_expression`` (CEL giving the same text) are
    its rule in the ValidatingAdmissionPolicy; ``controller`` says whether the controller stalls on it."""

    name: str
    check: Callable[[Obj, Obj | None], str]
    expression: str
    message_expression: str
    controller: bool = True


def _spec(obj: Obj | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _config(obj: Obj) -> Mapping[str, Any]:
    config = _spec(obj).get("redisConfig")
    return config if isinstance(config, Mapping) else {}


def _quote(text: str) -> str:
    return "'" + text + "'"


def cel_string(text: str) -> str:
    """``text`` as a CEL string literal."""
    return json.dumps(text)


def _quantity(text: str) -> Decimal:
    return Decimal(str(parse_quantity(text)["value"]))


def version_parts(text: str) -> tuple[int, ...]:
    """``7.2.5`` as (7, 2, 5); () when it is not a version as the policy writes one."""
    return tuple(int(p) for p in text.split(".")) if re.match(VERSION_PATTERN, text) else ()


VERSION_MESSAGE = (
    "spec.version must be a Redis version 6.0 or newer, written MAJOR.MINOR or MAJOR.MINOR.PATCH "
    "without leading zeros"
)


def _version(new: Obj, old: Obj | None) -> str:
    version = str(_spec(new).get("version") or "")
    parts = version_parts(version)
    # A missing version is the schema's to refuse (it is required); the controller says so too.
    return "" if not version or (parts and parts[0] >= 6) else VERSION_MESSAGE


def _config_names(new: Obj, old: Obj | None) -> str:
    bad = sorted(str(k) for k in _config(new) if not re.match(CONFIG_KEY_PATTERN, str(k)))
    if not bad:
        return ""
    more = f" (nor are {len(bad) - 1} more)" if len(bad) > 1 else ""
    return f"redisConfig: {_quote(bad[0])} is not a redis.conf directive name{more}"


def _reserved(new: Obj, old: Obj | None) -> str:
    found = [d for d in RESERVED_DIRECTIVES if d in _config(new)]
    if not found:
        return ""
    verb = "is" if len(found) == 1 else "are"
    names = ", ".join(_quote(d) for d in found)
    return f"redisConfig: {names} {verb} set by the controller and cannot be overridden"


def _required(key: str) -> Callable[[Obj, Obj | None], str]:
    needed, why = REQUIRED_VALUES[key]

    def check(new: Obj, old: Obj | None) -> str:
        config = _config(new)
        if key not in config or str(config[key]).strip().lower() == needed:
            return ""
        return f"redisConfig: {key} must be {_quote(needed)} (or left out): {why}"

    return check


def running_version(old: Obj) -> str:
    """What a cluster runs: the version every pod runs as the controller recorded it
    (``status.currentVersion``), else the version its spec asked for."""
    status = old.get("status")
    current = str(status.get("currentVersion") or "") if isinstance(status, Mapping) else ""
    return current or str(_spec(old).get("version") or "")


def is_downgrade(new: tuple[int, ...], running: tuple[int, ...]) -> bool:
    """Lower major, or minor, or patch when both name one (7.2 stands for the newest 7.2.x)."""
    if len(new) < 2 or len(running) < 2:
        return False
    if new[:2] != running[:2]:
        return new[:2] < running[:2]
    return len(new) == 3 and len(running) == 3 and new[2] < running[2]


def _downgrade(new: Obj, old: Obj | None) -> str:
    if old is None:
        return ""
    version, running = str(_spec(new).get("version") or ""), running_version(old)
    if not is_downgrade(version_parts(version), version_parts(running)):
        return ""
    annotations = (new.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ANNOTATION_ALLOW_DOWNGRADE) == version:
        return ""
    return (
        f"spec.version {version} is a downgrade from {running}: a Redis server may not load the data "
        f"files of a newer one; to downgrade anyway, set the annotation {ANNOTATION_ALLOW_DOWNGRADE}: "
        f'"{version}"'
    )


STORAGE_MESSAGE = (
    "spec.persistence.size must not shrink or be dropped (a persistent volume cannot be made smaller)"
)


def _size(obj: Obj) -> str:
    persistence = _spec(obj).get("persistence")
    return str(persistence.get("size") or "") if isinstance(persistence, Mapping) else ""


def _storage(new: Obj, old: Obj | None) -> str:
    if old is None or not _size(old):
        return ""
    if _size(new) and _quantity(_size(new)) >= _quantity(_size(old)):
        return ""
    return STORAGE_MESSAGE


SHARDS_MESSAGE = (
    "spec.shards may go down only when the remaining shards can hold the data: shards times "
    "resources.limits.memory must not go down (and memory limits must be set on both versions)"
)


def _shards(obj: Obj) -> int:
    return int(_spec(obj).get("shards", 3))


def _memory(obj: Obj) -> int:
    """shards x resources.limits.memory in bytes (rounded up as the apiserver does); -1 without one."""
    resources = _spec(obj).get("resources")
    limits = resources.get("limits") if isinstance(resources, Mapping) else None
    if not isinstance(limits, Mapping) or "memory" not in limits:
        return -1
    return math.ceil(_quantity(str(limits["memory"]))) * _shards(obj)


def _shard_memory(new: Obj, old: Obj | None) -> str:
    if old is None or _shards(new) >= _shards(old):
        return ""
    if _memory(old) > 0 and _memory(new) >= _memory(old):
        return ""
    return SHARDS_MESSAGE


def _required_refusal(key: str) -> SpecRefusal:
    needed, why = REQUIRED_VALUES[key]
    config = "object.spec.redisConfig"
    return SpecRefusal(
        f"required-{key}",
        _required(key),
        f"!has({config}) || !('{key}' in {config}) || {config}['{key}'].trim().lowerAscii() == '{needed}'",
        cel_string(f"redisConfig: {key} must be {_quote(needed)} (or left out): {why}"),
    )


def _cel_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{item}'" for item in items) + "]"


REFUSALS: tuple[SpecRefusal, ...] = (
    SpecRefusal(
        "version",
        _version,
        f"object.spec.version.matches('{VERSION_PATTERN}') && int(object.spec.version.split('.')[0]) >= 6",
        cel_string(VERSION_MESSAGE),
    ),
    SpecRefusal(
        "config-names",
        _config_names,
        "size(variables.badConfigNames) == 0",
        '"redisConfig: \'" + variables.badConfigNames.min() + "\' is not a redis.conf directive name"'
        " + (size(variables.badConfigNames) > 1"
        " ? ' (nor are ' + string(size(variables.badConfigNames) - 1) + ' more)' : '')",
    ),
    SpecRefusal(
        "reserved-directives",
        _reserved,
        "size(variables.reservedDirectives) == 0",
        "'redisConfig: ' + variables.reservedDirectives.map(d, \"'\" + d + \"'\").join(', ')"
        " + (size(variables.reservedDirectives) == 1 ? ' is' : ' are')"
        " + ' set by the controller and cannot be overridden'",
    ),
    *(_required_refusal(key) for key in sorted(REQUIRED_VALUES)),
    SpecRefusal(
        "downgrade",
        _downgrade,
        "!variables.downgrade || variables.downgradeAllowed",
        "'spec.version ' + object.spec.version + ' is a downgrade from ' + variables.runningText"
        " + ': a Redis server may not load the data files of a newer one; to downgrade anyway, set the'"
        f" + ' annotation {ANNOTATION_ALLOW_DOWNGRADE}: \"' + object.spec.version + '\"'",
        # Admission only: a rollback puts a cluster back on the version it ran before, and a
        # controller that stalled on it would leave a failed upgrade with no way back where no
        # admission judged the change (a person who asks for it at admission is told why).
        controller=False,
    ),
    SpecRefusal(
        "storage-shrinks",
        _storage,
        "!variables.updating || variables.oldSize == ''"
        " || (variables.newSize != ''"
        " && quantity(variables.newSize).compareTo(quantity(variables.oldSize)) >= 0)",
        cel_string(STORAGE_MESSAGE),
        controller=False,
    ),
    SpecRefusal(
        "shards-and-memory",
        _shard_memory,
        "!variables.updating || object.spec.shards >= oldObject.spec.shards"
        " || (variables.oldMemory > 0 && variables.newMemory >= variables.oldMemory)",
        cel_string(SHARDS_MESSAGE),
        controller=False,
    ),
)


def refusals_of(new: Obj, old: Obj | None, *, controller: bool = False) -> list[tuple[str, str]]:
    """(name, reason text) of each refusal ``new`` meets against ``old``, in the list's order; with
    ``controller`` only those the controller stalls on."""
    found = []
    for refusal in REFUSALS:
        if controller and not refusal.controller:
            continue
        try:
            message = refusal.check(new, old)
        except (TypeError, ValueError) as err:
            # The CRD's schema keeps such values out; an object that still has one is not let by.
            message = f"{refusal.name}: cannot be judged: {err}"
        if message:
            found.append((refusal.name, message))
    return found


# Named CEL values the rules above use; the policy declares them in this order.
_VERSION_LIST = f"matches('{VERSION_PATTERN}') ? %s.split('.').map(p, int(p)) : []"
CEL_VARIABLES: tuple[tuple[str, str], ...] = (
    ("updating", "request.operation == 'UPDATE' && oldObject != null"),
    (
        "badConfigNames",
        "has(object.spec.redisConfig)"
        f" ? object.spec.redisConfig.filter(k, !k.matches('{CONFIG_KEY_PATTERN}')) : []",
    ),
    (
        "reservedDirectives",
        f"has(object.spec.redisConfig) ? {_cel_list(RESERVED_DIRECTIVES)}"
        ".filter(d, d in object.spec.redisConfig) : []",
    ),
    (
        "newSize",
        "has(object.spec.persistence) && has(object.spec.persistence.size)"
        " ? string(object.spec.persistence.size) : ''",
    ),
    (
        "oldSize",
        "has(oldObject.spec.persistence) && has(oldObject.spec.persistence.size)"
        " ? string(oldObject.spec.persistence.size) : ''",
    ),
    *(
        (
            f"{which}Memory",
            f"has({obj}.spec.resources) && has({obj}.spec.resources.limits)"
            f" && 'memory' in {obj}.spec.resources.limits"
            f" ? quantity(string({obj}.spec.resources.limits.memory)).asInteger() * {obj}.spec.shards : -1",
        )
        for which, obj in (("new", "object"), ("old", "oldObject"))
    ),
    # A version as a list of integers, [] when it is not one (the version rule refuses that).
    ("newVersion", "object.spec.version." + _VERSION_LIST % "object.spec.version"),
    # What the cluster runs: status.currentVersion, else the version its spec asked for before.
    (
        "runningText",
        "!variables.updating ? ''"
        " : has(oldObject.status) && has(oldObject.status.currentVersion)"
        " && oldObject.status.currentVersion != ''"
        " ? oldObject.status.currentVersion : oldObject.spec.version",
    ),
    ("runningVersion", "variables.runningText." + _VERSION_LIST % "variables.runningText"),
    # Lower major, or lower minor, or lower patch when both name one (7.2 stands for the newest 7.2.x).
    (
        "downgrade",
        "size(variables.newVersion) >= 2 && size(variables.runningVersion) >= 2"
        " && (variables.newVersion[0] < variables.runningVersion[0]"
        " || (variables.newVersion[0] == variables.runningVersion[0]"
        " && (variables.newVersion[1] < variables.runningVersion[1]"
        " || (variables.newVersion[1] == variables.runningVersion[1]"
        " && size(variables.newVersion) == 3 && size(variables.runningVersion) == 3"
        " && variables.newVersion[2] < variables.runningVersion[2]))))",
    ),
    (
        "downgradeAllowed",
        "has(object.metadata.annotations)"
        f" && '{ANNOTATION_ALLOW_DOWNGRADE}' in object.metadata.annotations"
        f" && object.metadata.annotations['{ANNOTATION_ALLOW_DOWNGRADE}'] == object.spec.version",
    ),
)
