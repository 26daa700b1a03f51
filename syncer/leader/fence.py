"""Fencing: proof, before each write to a cluster, that this writer still holds the cluster's Lease.

A ``Fence`` answers three things: ``writing()`` is entered around one write and raises ``FencedOut``
unless the Lease is held for at least ``margin`` more seconds as this process's own monotonic clock
measures from the start of its last successful renewal (a process frozen with SIGSTOP past its lease
finds it expired the moment it runs again); ``token`` is one more than the Lease's transition count
when this writer acquired it, which grows with every new holder; ``lease`` names the Lease the token
counts. A cluster's state records the token and Lease of the writer that wrote it, and a write
carrying an older token of the same Lease, or none at all, is refused (``syncer.status.state_store``).

``FencedKube`` is the one decorator that applies a fence: each write through the ``KubeApi`` seam
(apply, create, replace, delete) passes the fence exactly once, right before the request leaves when
the client can say when that is (``ClusterClient.guard_writes``: after waiting for its own limits),
else before the call; reads pass through. Each agent is built with the fence of each cluster
(``FenceOf``): the leader Lease's for every cluster, each cluster's owner Lease's for a sharded
replica (``syncer.leader.shards``), or ``NO_LEASE`` for an agent run without leader election; the
agent's embedded controllers follow the same fences (``syncer.leader.follow`` runs them only while
open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Protocol

from syncer.errors import FencedOut
from syncer.kube import KubeApi
from syncer.kube.api import ApplyOptions, KubeObject, ListResult, WatchEvent

Guard = Callable[[], AbstractContextManager[None]]
"""Entered around one write: raises ``FencedOut`` when the write must not go out."""


class Fence(Protocol):
    """What a writer asks before it writes."""

    @property
    def token(self) -> int:
        """The fencing token (0: not fenced)."""
        ...

    @property
    def lease(self) -> str:
        """The Lease whose holders the token counts, as ``namespace/name`` ("" when not fenced)."""
        ...

    def check(self) -> None:
        """Return when a write may go out now; raise ``FencedOut`` when it must not."""
        ...

    def writing(self) -> AbstractContextManager[None]:
        """Around one write: ``check`` first, and the Lease is not handed on while inside."""
        ...


class Unfenced:
    """The fence of a writer that holds no Lease: every write may go, token 0. A cluster whose state
    records a token refuses this writer's state writes (``syncer.status.state_store``)."""

    token = 0
    lease = ""

    def check(self) -> None:
        return None

    def writing(self) -> AbstractContextManager[None]:
        return nullcontext()


UNFENCED: Fence = Unfenced()

NO_LEASE: Fence = UNFENCED
"""The writer that holds no Lease, by the operator's word (``--no-leader-elect``): it writes nothing
to a cluster whose state records a fencing token (``StateStore.refusal``), drift repair included."""


FenceOf = Callable[[str], Fence]
"""The fence that guards the writes to one cluster, by name."""


def everywhere(fence: Fence) -> FenceOf:
    """``fence`` for every cluster (the leader Lease's, or ``NO_LEASE``)."""

    def of(_: str) -> Fence:
        return fence

    return of


class FencedKube:
    """A ``KubeApi`` whose writes each pass ``fence`` once (see the module docstring). It takes
    ``inner`` over: every write through ``inner`` passes the fence from then on, so a client that
    must write regardless (the Leases' own) is never given to it."""

    def __init__(self, inner: KubeApi, fence: Fence) -> None:
        self.inner = inner
        self.fence = fence
        late: Callable[[Guard], None] | None = getattr(inner, "guard_writes", None)
        self._guard: Guard = fence.writing
        if late is not None:
            late(fence.writing)  # the client enters it right before each write leaves
            self._guard = nullcontext

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
        with self._guard():
            return self.inner.apply(body, options)

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        with self._guard():
            return self.inner.apply_status(body, options)

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        with self._guard():
            return self.inner.create(body)

    def replace(self, body: Mapping[str, Any]) -> KubeObject:
        with self._guard():
            return self.inner.replace(body)

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", propagation: str = "Background"
    ) -> None:
        with self._guard():
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
    """The fence of a writer holding a Lease through ``elector``; see the module docstring."""

    def __init__(self, elector: HoldsLease, margin: float) -> None:
        self._elector = elector
        self.margin = margin

    @property
    def token(self) -> int:
        return self._elector.token

    @property
    def lease(self) -> str:
        return self._elector.lease_name

    def check(self) -> None:
        left = self._elector.held_for()
        if left < self.margin:
            raise FencedOut(
                f"not writing: this replica no longer holds the leader Lease for the next "
                f"{self.margin:g}s ({'lost' if left <= 0 else f'{left:.1f}s left'})"
            )

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.check()
        yield


class HoldsLease(Protocol):
    """What a LeaseFence asks the elector: the token, the Lease's name and how long the Lease is
    surely still held."""

    @property
    def token(self) -> int: ...

    @property
    def lease_name(self) -> str: ...

    def held_for(self) -> float: ...
