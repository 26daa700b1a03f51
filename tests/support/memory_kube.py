"""A dict-backed KubeApi for fast tests of syncer's own decisions (wave order, resume, rollback,
unsaved state). It stores what it is given: no defaulting, no admission, and of server-side apply
only what keeps a person's acts beside a cluster's sync state: each field manager owns the keys of a
ConfigMap's ``data`` it applied last, and an apply keeps the keys others own. What Kubernetes itself
does stays tested against the real local fleet."""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from syncer.errors import KubeError, NotFound, ServerError
from syncer.kube import ApplyOptions, KubeObject, ListResult, WatchEvent

Key = tuple[str, str, str, str]


def _key(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    return (str(body["apiVersion"]), str(body["kind"]), str(meta.get("namespace", "")), str(meta["name"]))


def _fields_v1(node: Mapping[str, Any]) -> dict[str, Any]:
    """The fieldsV1 set of the fields in ``node`` (maps walked, anything else one field)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        out[f"f:{key}"] = _fields_v1(value) if isinstance(value, Mapping) and value else {}
    return out


def _owned_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """What an apply of ``body`` owns: everything it sets but the object's identity."""
    owned = {k: v for k, v in body.items() if k not in {"apiVersion", "kind", "status"}}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in {"name", "namespace"}}
    owned["metadata"] = meta
    return {k: v for k, v in owned.items() if v}


def _matches(obj: Mapping[str, Any], selector: str) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        name, _, value = term.partition("=")
        if name not in labels or (value and labels[name] != value):
            return False
    return True


class MemoryKube:
    """One in-memory cluster. ``calls`` counts every call by (verb, kind, name); ``down`` makes every
    call fail as an unreachable apiserver does; ``fail`` makes the calls of one (verb, kind, name)
    fail with the error given (name "" for every object of the kind)."""

    def __init__(self, cluster: str) -> None:
        self._cluster = cluster
        self.objects: dict[Key, KubeObject] = {}
        self.calls: Counter[tuple[str, str, str]] = Counter()
        self.down = False
        self.fail: dict[tuple[str, str, str], KubeError] = {}
        self._versions = itertools.count(1)
        # Per ConfigMap, the ``data`` keys each field manager applied last (``apply`` keeps them).
        self._data_owners: dict[Key, dict[str, frozenset[str]]] = {}

    @property
    def cluster(self) -> str:
        return self._cluster

    def _call(self, verb: str, kind: str, name: str = "") -> None:
        self.calls[(verb, kind, name)] += 1
        if self.down:
            raise ServerError("cannot reach the apiserver", cluster=self._cluster)
        error = self.fail.get((verb, kind, name)) or self.fail.get((verb, kind, ""))
        if error is not None:
            raise error

    def count(self, verb: str, kind: str, name: str = "") -> int:
        """How many ``verb`` calls were made for ``kind`` (and ``name``, when given)."""
        return sum(n for (v, k, o), n in self.calls.items() if v == verb and k == kind and name in ("", o))

    def _stamp(self, body: Mapping[str, Any], old: KubeObject | None) -> KubeObject:
        obj: KubeObject = copy.deepcopy(dict(body))
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(next(self._versions))
        meta["uid"] = (old or {}).get("metadata", {}).get("uid") or f"uid-{meta['resourceVersion']}"
        generation = int((old or {}).get("metadata", {}).get("generation", 0))
        changed = old is None or {k: v for k, v in old.items() if k not in {"metadata", "status"}} != {
            k: v for k, v in obj.items() if k not in {"metadata", "status"}
        }
        meta["generation"] = generation + 1 if changed else generation
        if old is not None and "status" in old and "status" not in obj:
            obj["status"] = old["status"]
        return obj

    # -- the KubeApi seam -------------------------------------------------------------------------

    def list(
        self, api_version: str, kind: str, *, namespace: str = "", label_selector: str = ""
    ) -> ListResult:
        self._call("list", kind)
        items = [
            copy.deepcopy(obj)
            for (av, k, ns, _), obj in sorted(self.objects.items())
            if av == api_version and k == kind and namespace in ("", ns) and _matches(obj, label_selector)
        ]
        return ListResult(items, str(next(self._versions)))

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject:
        self._call("get", kind, name)
        obj = self.objects.get((api_version, kind, namespace, name))
        if obj is None:
            raise NotFound(f"{kind}/{namespace}/{name} not found", cluster=self._cluster, status=404)
        return copy.deepcopy(obj)

    def apply(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        """Stores ``body`` as the whole object (no merge with what others set) and records the field
        manager's Apply entry over the fields it sets, as the plan reads ownership from them."""
        key = _key(body)
        self._call("dry-run" if options.dry_run else "apply", key[1], key[3])
        if key[1] == "ConfigMap" and not options.dry_run:
            body = self._keeping_others_data(key, body, options.field_manager)
        obj = self._stamp(body, self.objects.get(key))
        entry = {
            "manager": options.field_manager,
            "operation": "Apply",
            "apiVersion": body["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": _fields_v1(_owned_body(body)),
        }
        obj["metadata"]["managedFields"] = [entry]
        if not options.dry_run:
            self.objects[key] = obj
        return copy.deepcopy(obj)

    def _keeping_others_data(self, key: Key, body: Mapping[str, Any], manager: str) -> dict[str, Any]:
        """``body`` with the ``data`` keys other field managers applied last (those it sets become
        ``manager``'s, as a forced apply takes them over), as server-side apply merges a map."""
        mine = frozenset(body.get("data") or {})
        owners = self._data_owners.setdefault(key, {})
        owners.update({m: keys - mine for m, keys in owners.items()})
        owners[manager] = mine
        old = (self.objects.get(key) or {}).get("data") or {}
        others = frozenset().union(*(keys for m, keys in owners.items() if m != manager))
        kept = {k: v for k, v in old.items() if k in others}
        return {**body, "data": {**kept, **(body.get("data") or {})}}

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        key = _key(body)
        self._call("apply-status", key[1], key[3])
        current = self.objects.get(key)
        if current is None:
            raise NotFound(f"{key[1]}/{key[2]}/{key[3]} not found", cluster=self._cluster, status=404)
        current["status"] = copy.deepcopy(body.get("status") or {})
        return copy.deepcopy(current)

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        named = copy.deepcopy(dict(body))
        meta = named.setdefault("metadata", {})
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', 'object-')}{next(self._versions)}"
        key = _key(named)
        self._call("create", key[1], key[3])
        obj = self._stamp(named, None)
        self.objects[key] = obj
        return copy.deepcopy(obj)

    def replace(self, body: Mapping[str, Any]) -> KubeObject:
        key = _key(body)
        self._call("replace", key[1], key[3])
        if key not in self.objects:
            raise NotFound(f"{key[1]}/{key[2]}/{key[3]} not found", cluster=self._cluster, status=404)
        self.objects[key] = self._stamp(body, self.objects[key])
        return copy.deepcopy(self.objects[key])

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", propagation: str = "Background"
    ) -> None:
        self._call("delete", kind, name)
        if self.objects.pop((api_version, kind, namespace, name), None) is None:
            raise NotFound(f"{kind}/{namespace}/{name} not found", cluster=self._cluster, status=404)

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str = "",
        resource_version: str = "",
        timeout_seconds: int = 60,
    ) -> Iterator[WatchEvent]:
        """Watches are not part of what these tests decide: nothing is ever sent."""
        self._call("watch", kind)
        return iter(())
