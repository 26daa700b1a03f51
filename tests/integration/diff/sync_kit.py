"""What the diff-versus-sync table needs: one cluster of the fleet with an embedded controller, syncs
through the engine as the agent runs them, ``syncer diff`` through its command line, and a check
that the cluster changed exactly as each object's verdict said.

The check is written independently of the plan's code: it compares the live objects before and
after the sync (without server bookkeeping, status, finalizers and syncer's applied-fields
annotation), leaf by leaf, with the fields the diff listed.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from syncer.cli import cli
from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.controller.model import ControllerOptions
from syncer.controller.runner import run_controller
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions, RolloutReport
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.manifests import load_fleet
from tests.integration.diff.conftest import API_VERSION, write_repo
from tests.support.unfenced import UNFENCED_HOOKS

Body = dict[str, Any]
Key = tuple[str, str, str]
"""(kind, namespace, name) of an object in the one cluster."""

KINDS = (("v1", "Namespace"), (API_VERSION, "RedisCluster"))


def rc(namespace: str, name: str, **spec: Any) -> Body:
    """A small RedisCluster the controller makes Ready quickly: one master, no volumes."""
    base = {"version": "7.2.4", "shards": 1, "replicasPerShard": 0, "persistence": {"enabled": False}}
    return {
        "apiVersion": API_VERSION,
        "kind": "RedisCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {**base, **spec},
    }


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body["metadata"]
    return (str(body["kind"]), str(meta.get("namespace", "")), str(meta["name"]))


def digest(value: Any) -> str:
    """The mask syncer shows for a secret value (its documented form)."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"<masked sha256:{hashlib.sha256(text.encode()).hexdigest()[:8]}>"


def comparable(obj: Mapping[str, Any] | None) -> Body | None:
    """A live object without what the server, the controller and syncer's bookkeeping change."""
    if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
        return None
    out = copy.deepcopy(dict(obj))
    out.pop("status", None)
    meta = out["metadata"]
    for noise in ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "finalizers"):
        meta.pop(noise, None)
    annotations = meta.get("annotations") or {}
    annotations.pop("syncer.dev/applied-fields", None)
    if not annotations:
        meta.pop("annotations", None)
    return out


def leaves(body: Mapping[str, Any] | None, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    found: dict[tuple[str, ...], Any] = {}
    for name, value in (body or {}).items():
        path = (*prefix, str(name))
        if isinstance(value, Mapping) and value:
            found.update(leaves(value, path))
        else:
            found[path] = value
    return found


def pointer_path(pointer: str) -> tuple[str, ...]:
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:])


def owned_by(obj: Mapping[str, Any], manager: str, path: tuple[str, ...]) -> bool:
    """Whether ``manager``'s Apply entry owns ``path`` (or a list above it)."""
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") != manager or entry.get("operation") != "Apply":
            continue
        node = entry.get("fieldsV1") or {}
        for part in path:
            if not isinstance(node, Mapping) or f"f:{part}" not in node:
                break
            node = node[f"f:{part}"]
        else:
            return True
    return False


@dataclass
class Cluster:
    """One cluster of the fleet for one test: its client, a state namespace, a running controller."""

    name: str
    kubeconfig: str
    namespace: str
    api: ClusterClient
    state_namespace: str
    stop: threading.Event = field(default_factory=threading.Event)

    # -- live state ---------------------------------------------------------------------------------

    def snapshot(self, namespaces: tuple[str, ...]) -> dict[Key, Body]:
        """Every RedisCluster of ``namespaces`` and those Namespaces themselves, as read live."""
        found: dict[Key, Body] = {}
        for namespace in namespaces:
            for item in self.api.list(API_VERSION, "RedisCluster", namespace=namespace).items:
                found[key_of(item)] = item
            with contextlib.suppress(NotFound):
                found[("Namespace", "", namespace)] = self.api.get("v1", "Namespace", namespace)
        return found

    def wait_gone(self, kind: str, name: str, namespace: str = "", timeout: float = 60.0) -> None:
        api_version = "v1" if kind == "Namespace" else API_VERSION
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.api.get(api_version, kind, name, namespace)
            except NotFound:
                return
            time.sleep(0.3)
        raise AssertionError(f"{kind} {namespace}/{name} is still there after {timeout}s")

    # -- the two commands ---------------------------------------------------------------------------

    def repo(self, root: Path, bodies: list[Body]) -> Path:
        return write_repo(root, [self.name], {self.name: bodies})

    def sync(self, repo: Path, revision: str) -> RolloutReport:
        """One sync of ``repo`` at ``revision`` through the engine, as ``syncer sync --once`` runs it."""
        gate = WaveGate(max_concurrent=1, health_timeout=120.0, bake=0.0)
        options = RolloutOptions(
            rollout=RolloutPolicy((WavePolicy("all", 100.0, None, gate),), rollback=False),
            state_namespace=self.state_namespace,
            health_poll=0.5,
        )
        return FleetRollout({self.name: self.api}, options, hooks=UNFENCED_HOOKS).sync(
            load_fleet(repo, revision)
        )

    def diff(self, repo: Path, output: str = "json") -> tuple[int, str]:
        args = [
            "diff",
            "--repo",
            str(repo),
            "--cluster",
            self.name,
            "--kubeconfig",
            self.kubeconfig,
            "--state-namespace",
            self.state_namespace,
            "-o",
            output,
        ]
        result = CliRunner().invoke(cli, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        return result.exit_code, result.stdout


@contextlib.contextmanager
def running_controller(cluster: Cluster, namespaces: tuple[str, ...]) -> Iterator[None]:
    """The embedded controller for the test's namespaces; on the way out every RedisCluster there is
    deleted and its finalizer released before the controller stops."""
    threads = [
        threading.Thread(
            target=run_controller,
            args=(
                ControllerOptions(
                    kubeconfig=cluster.kubeconfig,
                    context=cluster.name,
                    watch_namespace=namespace,
                    leader_elect=False,
                    watch_timeout_seconds=5,
                    poll_seconds=1.0,
                ),
                cluster.stop,
            ),
            daemon=True,
        )
        for namespace in namespaces
    ]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        for namespace in namespaces:
            for item in cluster.api.list(API_VERSION, "RedisCluster", namespace=namespace).items:
                with contextlib.suppress(NotFound):
                    cluster.api.delete(API_VERSION, "RedisCluster", item["metadata"]["name"], namespace)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
            cluster.api.list(API_VERSION, "RedisCluster", namespace=n).items for n in namespaces
        ):
            time.sleep(0.5)
        cluster.stop.set()
        for thread in threads:
            thread.join(timeout=30)


# -- the check: the cluster changed exactly as the verdict said ------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One object of the diff's JSON document, as recorded before the sync."""

    key: Key
    action: str
    fields: tuple[Mapping[str, Any], ...]
    obj: Mapping[str, Any] | None
    message: str

    @staticmethod
    def of(doc: Mapping[str, Any]) -> Verdict:
        key = (str(doc["kind"]), str(doc["namespace"]), str(doc["name"]))
        return Verdict(key, doc["action"], tuple(doc["fields"]), doc["object"], doc["message"])


def verdicts(document: Mapping[str, Any]) -> tuple[dict[Key, Verdict], Mapping[str, Any]]:
    (wave,) = document["waves"]
    (cluster,) = wave["clusters"]
    return {Verdict.of(o).key: Verdict.of(o) for o in cluster["objects"]}, cluster


def _same_leaf(expected: Any, live_value: Any) -> bool:
    if isinstance(expected, str) and expected.startswith("<masked sha256:"):
        return digest(live_value) == expected
    return bool(json.dumps(expected, sort_keys=True) == json.dumps(live_value, sort_keys=True))


def mismatch(verdict: Verdict, before: Body | None, after: Body | None, blocked: bool) -> str:
    """``""`` when the object changed exactly as ``verdict`` says (``before``/``after`` are the
    live objects around the sync), else what differs."""
    old, new = comparable(before), comparable(after)
    if blocked or verdict.action in ("unchanged", "keep", "error", "conflict"):
        return "" if old == new else f"{verdict.action}: changed anyway: {old} -> {new}"
    if verdict.action == "prune":
        return "" if new is None else "prune: still there"
    if verdict.action == "create":
        if old is not None or new is None:
            return f"create: before={old is not None} after={new is not None}"
        wanted = leaves(verdict.obj)
        got = leaves(new)
        wrong = [
            p for p, v in wanted.items() if p != ("metadata", "annotations") and not _same_leaf(v, got.get(p))
        ]
        return f"create: fields differ from the diff's object: {wrong}" if wrong else ""
    if old is None or new is None:
        return f"{verdict.action}: before={old is not None} after={new is not None}"
    listed = {pointer_path(f["path"]): f for f in verdict.fields}
    problems = []
    got_before, got_after = leaves(old), leaves(new)
    for path, listed_field in listed.items():
        if listed_field["after"] is None:
            if path in got_after:
                problems.append(f"{'/'.join(path)} should be gone, is {got_after[path]!r}")
        elif not _same_leaf(listed_field["after"], got_after.get(path)):
            problems.append(
                f"{'/'.join(path)}: diff said {listed_field['after']!r}, live {got_after.get(path)!r}"
            )
        takes = listed_field["action"] in ("adopt", "drift", "update") and listed_field["after"] is not None
        if takes and not owned_by(after or {}, "syncer", path):
            problems.append(f"{'/'.join(path)} is not owned by syncer after the sync")
    for path in set(got_before) | set(got_after):
        covered = any(path[: len(p)] == p or p[: len(path)] == path for p in listed)
        if not covered and got_before.get(path) != got_after.get(path):
            problems.append(f"{'/'.join(path)} changed without being listed")
    return "; ".join(problems)


Meddle = Callable[[Cluster], None]
