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
else before the call; reads pass through. ``FleetFences`` says which fence guards each cluster: none
until the agent knows how it runs, then the leader Lease's for every cluster or, for a sharded
replica, each cluster's owner Lease's (``syncer.leader.shards``). ``FleetFences.settled_of`` is the
same fence for a writer that must not act before then (the agent's embedded controllers, which
``syncer.leader.follow`` runs only while it is open): closed until the agent knows.
"""

from __future__ import annotations

import threading
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


class Unsettled:
    """The fence of a writer that may not write yet: its agent does not know yet whether it leads."""

    token = 0
    lease = ""

    def check(self) -> None:
        raise FencedOut(
            "not writing: this agent does not know yet whether it leads or which clusters it owns"
        )

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.check()
        yield


UNSETTLED: Fence = Unsettled()

FenceOf = Callable[[str], Fence]
"""The fence that guards the writes to one cluster, by name."""


class FleetFences:
    """Which fence guards each cluster's writes: ``UNFENCED`` until ``use`` says (the agent builds its
    pass before it knows whether it leads, is one replica of a sharded group, or neither). A fence
    given by ``of`` follows a later ``use``."""

    def __init__(self) -> None:
        self._one: Fence = UNFENCED
        self._of: FenceOf | None = None
        self.settled = threading.Event()  # set by the first ``use`` or ``use_for_all``

    def use(self, of: FenceOf) -> None:
        """Guard each cluster with its own fence (a sharded replica: each cluster's owner Lease)."""
        self._of = of
        self.settled.set()

    def use_for_all(self, fence: Fence) -> None:
        """Guard every cluster with one fence (the leader Lease; ``UNFENCED`` without one)."""
        self._one, self._of = fence, None
        self.settled.set()

    def of(self, cluster: str) -> Fence:
        return _FollowedFence(self, cluster)

    def settled_of(self, cluster: str) -> Fence:
        """``of(cluster)``, but closed (``UNSETTLED``) until ``use`` or ``use_for_all`` is called."""
        return _FollowedFence(self, cluster, settled=True)

    def current(self, cluster: str) -> Fence:
        return self._of(cluster) if self._of is not None else self._one


class _FollowedFence:
    """One cluster's fence as ``FleetFences`` gives it at the time of each question."""

    def __init__(self, fences: FleetFences, cluster: str, settled: bool = False) -> None:
        self._fences = fences
        self._cluster = cluster
        self._settled = settled

    def _current(self) -> Fence:
        if self._settled and not self._fences.settled.is_set():
            return UNSETTLED
        return self._fences.current(self._cluster)

    @property
    def token(self) -> int:
        return self._current().token

    @property
    def lease(self) -> str:
        return self._current().lease

    def check(self) -> None:
        self._current().check()

    def writing(self) -> AbstractContextManager[None]:
        return self._current().writing()


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
