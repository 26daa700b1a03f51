"""What a rollout knows of its clusters: their sync states, read once per pass and kept current as
the rollout writes them, the clusters it could not read (they wait) and the states it could not
write (remembered for the report and the next pass). The applier, the gate and the rollout hold it.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping

from syncer.apply import with_retries
from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.revision_history import Actor, HistoryEntry
from syncer.domain.sync_state import ClusterSyncState
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions
from syncer.errors import FencedOut, HeldSinceRead, KubeError, RecordUnreadable
from syncer.kube import KubeApi
from syncer.status.state_store import LoadedState, StateStore


class RolloutStates:
    """The clusters' sync states during one rollout (see the module docstring)."""

    def __init__(
        self,
        clients: Mapping[str, KubeApi],
        options: RolloutOptions = RolloutOptions(),
        *,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
        listener: Listener | None = None,
        hooks: RolloutHooks,
    ) -> None:
        self.clients = clients
        self.owns = hooks.owns
        self.sharded = hooks.sharded
        self.newer = hooks.newer
        self.admits = hooks.admits
        self.signer = hooks.signer
        self.options = options
        self.stop = stop or threading.Event()
        self.clock = clock
        self.listener = listener or (lambda _: None)
        self.stores = {
            name: StateStore(api, options.state_namespace, hooks.fences(name), options.history_keep)
            for name, api in clients.items()
        }
        # One lock per cluster: a cluster whose apiserver hangs must not hold up the others' state writes.
        self._locks = {name: threading.Lock() for name in clients}
        self.states: dict[str, ClusterSyncState] = {}
        # Clusters whose latest state could not be written, with the error (cleared by a later write).
        self.unsaved: dict[str, str] = {}
        # Clusters that cannot be used this pass (state unreadable, no connection), with why: their
        # waves wait for them, the other clusters go on.
        self.unreachable: dict[str, str] = {}

    def load_state(self, cluster: str) -> LoadedState:
        """One read of ``cluster``'s stored state (retried while the apiserver is busy); KubeError when
        it cannot be read."""
        kinds = [(k.api_version, k.kind) for k in self.options.diff.kinds]
        store = self.stores[cluster]
        return with_retries(functools.partial(store.load, kinds), self.options.apply.retry, self.stop)

    def read_states(
        self,
        preloaded: Mapping[str, LoadedState] | None = None,
        failed: Mapping[str, KubeError] | None = None,
    ) -> dict[str, ClusterSyncState]:
        """Every cluster's stored state, read once per pass (``preloaded`` ones, and ``failed`` reads,
        made earlier in the same pass, are not made again); the rollout keeps them current after. A
        cluster whose state cannot be read is reported (``unreachable``) and left out; the others go on."""
        for name in self.stores:
            try:
                error = (failed or {}).get(name)
                if error is not None:
                    raise error
                loaded = (preloaded or {}).get(name) or self.load_state(name)
            except KubeError as err:
                self.states.pop(name, None)
                self.unreachable[name] = problem = f"cannot read its sync state: {err}"
                self.listener(PassEvent(Step.CLUSTER_UNREACHABLE, cluster=name, error=problem, cause=err))
                continue
            self.states[name] = loaded.state
            self.stores[name].seen(loaded)
            self.unreachable.pop(name, None)
            self.unsaved.pop(name, None)
            if loaded.problem:
                self.listener(PassEvent(Step.STATE_REBUILT, cluster=name, reason=loaded.problem))
            refused = self.stores[name].refusal(loaded) if self.owns(name) else ""
            if refused:
                # A writer its state refuses writes nothing there this pass, not even drift repair.
                self.unreachable[name] = refused
                self.listener(PassEvent(Step.CLUSTER_UNREACHABLE, cluster=name, error=refused))
        return dict(self.states)

    def reload(self, cluster: str) -> ClusterSyncState:
        """``cluster``'s state as it is recorded now (one read, no rebuild; what was read last when
        it cannot be read): a cluster another replica owns is judged from what its owner recorded."""
        with contextlib.suppress(KubeError):
            self.states[cluster] = self.stores[cluster].load().state
        return self.states[cluster]

    def learn_acts(self, cluster: str) -> None:
        """Learn the person's acts ``cluster`` records now (one read; kept as they were when it
        cannot be read): a rollout that waits without writing (a bake) learns an abort meanwhile."""
        with contextlib.suppress(KubeError):
            self.states[cluster] = self.stores[cluster].with_acts(self.states[cluster])

    def histories(self) -> dict[str, tuple[HistoryEntry, ...]]:
        """Each read cluster's history of revisions as its ConfigMap was last read or written (no I/O);
        a cluster whose record is unreadable is left out, as its next state write starts it again."""
        found = {}
        for name in self.states:
            try:
                found[name] = self.stores[name].history()
            except RecordUnreadable:
                continue
        return found

    def hold_back(self, revision: str, clusters: list[str] | None = None) -> None:
        """Leave out (as clusters that cannot be used, with the reason) each cluster of ``clusters``
        (default: every one read) that records a revision or last good revision ``revision`` may not
        replace: it does not descend from it, and history rewrites are not allowed. Only a rollback
        decision puts a cluster on an older revision."""
        for name in list(clusters if clusters is not None else self.states):
            state = self.states.get(name)
            if state is None:
                continue
            for recorded in dict.fromkeys((state.revision, state.last_good)):
                if recorded and not self.admits(revision, recorded):
                    del self.states[name]
                    self.unreachable[name] = problem = (
                        f"it records {recorded[:12]}, which {revision[:12]} does not descend from; "
                        "not applied there (allowHistoryRewrite is off)"
                    )
                    self.listener(PassEvent(Step.CLUSTER_UNREACHABLE, cluster=name, error=problem))
                    break

    def save_unsaved(self) -> None:
        """Write again each state that was decided but could not be written (``unsaved``) on the
        clusters this replica may write to, so that what was decided is recorded by the first pass
        that can write it, also when the pass has nothing else to write there (a halted revision)."""
        for cluster in sorted(self.unsaved):
            state = self.states.get(cluster)
            if state is not None and self.owns(cluster):
                self.save(cluster, state)

    def save(
        self, cluster: str, state: ClusterSyncState, held: Callable[[ClusterSyncState], bool] | None = None
    ) -> bool:
        """Record ``state`` as the cluster's state and write it to the cluster; False when ``held``
        (a person's act forbids the write: see ``StateStore.save``) was found true of the acts the
        cluster records now, read again because someone wrote its record since the pass read it:
        nothing is written, and the cluster's state is the one read with those acts.

        A write that fails (the apiserver is unreachable) does not stop the rollout: the rollout goes
        on from ``state``, the error is kept in ``unsaved`` for the report, and the cluster keeps its
        last stored state, which is older but whole. A fenced write (``FencedOut``) of a sharded
        replica means another replica owns the cluster now; without sharding it means this replica
        lost the Lease, and it ends the pass (nothing more may be written).
        """
        with self._locks[cluster]:
            if self.states.get(cluster) == state and cluster not in self.unsaved:
                return True
            try:
                by = self.options.actor
                if state.pin.active and state.pin.revision == state.revision:
                    by = f"{by}, for syncer rollback by {state.pin.by}: {state.pin.reason}"
                actor = Actor(by, self.signer(state.revision))
                self.states[cluster] = self.stores[cluster].save(state, self.clock(), actor, held)
                self.unsaved.pop(cluster, None)
                return True
            except HeldSinceRead:
                self.states[cluster] = self.stores[cluster].learnt(self.states[cluster])
                return False
            except FencedOut:
                if not self.sharded:
                    raise
                # Another replica owns the cluster now: what it records is the cluster's state.
                self.states[cluster] = state
                return True
            except KubeError as err:
                self.states[cluster] = state
                self.unsaved[cluster] = problem = str(err)
                cause = err
        self.listener(
            PassEvent(Step.STATE_UNSAVED, state.wave, cluster, state.revision, error=problem, cause=cause)
        )
        return True
