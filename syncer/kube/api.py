"""The seam between syncer and a Kubernetes cluster: what the rest of syncer may ask of one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from syncer.domain.applied import FIELD_MANAGER

KubeObject = dict[str, Any]
"""A raw Kubernetes object as the apiserver sends it (parsed JSON)."""


@dataclass(frozen=True)
class ApplyOptions:
    """Server-side apply: our field manager; ``dry_run`` asks the server to predict without writing."""

    field_manager: str = FIELD_MANAGER
    dry_run: bool = False
    force: bool = False


@dataclass(frozen=True)
class ClientOptions:
    """Per-cluster client settings. ``qps <= 0`` disables the rate limit.

    The defaults let one cluster's apply run at about the pace a single apiserver sustains (a few
    hundred small writes a second, measured by ``bench/bench_apply.py``); ``max_in_flight`` is the
    bound that matters across many clusters, and the server's 429 with Retry-After is honoured.
    ``user_agent`` is sent with every request, so the apiserver's audit log tells replicas apart."""

    qps: float = 400.0
    burst: int = 800
    max_in_flight: int = 16
    timeout: float = 30.0
    page_size: int = 500
    read_attempts: int = 4
    user_agent: str = ""


@dataclass(frozen=True)
class WatchEvent:
    """One event of a watch: ADDED, MODIFIED, DELETED or BOOKMARK, and the object."""

    type: str
    object: KubeObject


@dataclass(frozen=True)
class ListResult:
    items: list[KubeObject]
    resource_version: str


class KubeApi(Protocol):
    """One cluster's API as syncer uses it. Every failure is a ``syncer.errors.KubeError``."""

    @property
    def cluster(self) -> str: ...

    def list(
        self, api_version: str, kind: str, *, namespace: str = "", label_selector: str = ""
    ) -> ListResult: ...

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject: ...

    def apply(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject: ...

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject: ...

    def create(self, body: Mapping[str, Any]) -> KubeObject: ...

    def replace(self, body: Mapping[str, Any]) -> KubeObject: ...

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", propagation: str = "Background"
    ) -> None: ...

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str = "",
        resource_version: str = "",
        timeout_seconds: int = 60,
    ) -> Iterator[WatchEvent]: ...
