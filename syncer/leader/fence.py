"""Fencing: proof, before each write to a cluster, that this replica still leads.

A ``Fence`` answers two things: ``check()`` raises ``FencedOut`` unless the Lease is held for at
least ``margin`` more seconds as this process's own monotonic clock measures from the start of its
last successful renewal (a process frozen with SIGSTOP past its lease finds it expired the moment
it runs again), and ``token`` is one more than the Lease's transition count when this replica
acquired it, which grows with every new holder: a cluster's state records the token of the leader
that wrote it, and a write carrying an older token is refused (see ``syncer.status.state_store``).

``FencedKube`` puts the check in front of every write through the ``KubeApi`` seam (apply, create,
replace, delete); reads pass through. A replica without leader election uses ``UNFENCED``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from syncer.errors import FencedOut
from syncer.kube import KubeApi
from syncer.kube.api import ApplyOptions, KubeObject, ListResult, WatchEvent


class Fence(Protocol):
    """What a writer asks before it writes."""

    @property
    def token(self) -> int:
        """The fencing token (0: not fenced)."""
        ...

    def check(self) -> None:
        """Return when a write may go out now; raise ``FencedOut`` when it must not."""
        ...


class Unfenced:
    """The fence of a replica that does not elect a leader: every write may go, token 0."""

    token = 0

    def check(self) -> None:
        return None


UNFENCED: Fence = Unfenced()


class LeaderFence:
    """A fence that can be pointed at another one later: ``UNFENCED`` until ``use`` gives it the
    Lease's fence (the agent builds its connections before it knows whether it will elect)."""

    def __init__(self) -> None:
        self._current: Fence = UNFENCED

    def use(self, fence: Fence) -> None:
        self._current = fence

    @property
    def token(self) -> int:
        return self._current.token

    def check(self) -> None:
        self._current.check()


class FencedKube:
    """A ``KubeApi`` whose writes each pass ``fence.check()`` first."""

    def __init__(self, inner: KubeApi, fence: Fence) -> None:
        self.inner = inner
        self.fence = fence

    @property
    def cluster(self) -> str:
        return self.inner.cluster

    def list(
        self, api_version: str, kind: str, *, namespace: str = "", label_selector: str = ""
    ) -> ListResult:
        return self.inner.list(api_version, kind, namespace=namespace, label_selector=label_selector)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject:
        return self.inner.get(api_version, kind, name, namespace)

    def apply(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        self.fence.check()
        return self.inner.apply(body, options)

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        self.fence.check()
        return self.inner.apply_status(body, options)

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        self.fence.check()
        return self.inner.create(body)

    def replace(self, body: Mapping[str, Any]) -> KubeObject:
        self.fence.check()
        return self.inner.replace(body)

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", propagation: str = "Background"
    ) -> None:
        self.fence.check()
        self.inner.delete(api_version, kind, name, namespace, propagation)

    def watch(
        self,
        api_version: str,
        kind: str,
        *,
        namespace: str = "",
        resource_version: str = "",
        timeout_seconds: int = 60,
    ) -> Iterator[WatchEvent]:
        return self.inner.watch(
            api_version,
            kind,
            namespace=namespace,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
        )

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


class LeaseFence:
    """The fence of a replica holding a Lease through ``elector``; see the module docstring."""

    def __init__(self, elector: HoldsLease, margin: float) -> None:
        self._elector = elector
        self.margin = margin

    @property
    def token(self) -> int:
        return self._elector.token

    def check(self) -> None:
        left = self._elector.held_for()
        if left < self.margin:
            raise FencedOut(
                f"not writing: this replica no longer holds the leader Lease for the next "
                f"{self.margin:g}s ({'lost' if left <= 0 else f'{left:.1f}s left'})"
            )


class HoldsLease(Protocol):
    """What a LeaseFence asks the elector: the token and how long the Lease is surely still held."""

    @property
    def token(self) -> int: ...

    def held_for(self) -> float: ...
