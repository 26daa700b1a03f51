"""Pass events made visible: a log record, the rollout's status (``syncer.domain.rollout_status``)
in ``syncer_wave_state`` and, where the step has an Event reason, a Kubernetes Event about each
cluster's sync-state ConfigMap.

What each step gets is said once, in ``syncer.domain.progress.TREATMENTS``; this module only carries
it out. It decides nothing about the rollout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from syncer.domain.progress import PassEvent, Step
from syncer.domain.rollout_records import reconcile
from syncer.domain.rollout_status import RolloutStatus, advance, initial
from syncer.kube import KubeApi
from syncer.kube.events import EventRecorder, Regarding
from syncer.status.metrics import SyncerMetrics
from syncer.status.state_store import STATE_CONFIGMAP

log = logging.getLogger("syncer.agent")

_WINDOW_STEPS = frozenset({Step.WINDOW_OPEN, Step.WINDOW_CLOSED, Step.WINDOW_OVERRIDDEN})
# A write to a cluster that failed: in a wave's apply, or repairing drift.
_APPLY_ERROR_STEPS = frozenset({Step.APPLY_FAILED, Step.DRIFT_REPAIR_FAILED})
_GATE_STEPS = frozenset({Step.AWAITING_PROMOTION, Step.PROMOTED, Step.ROLLOUT_ABORTED})
# A wave's gate judged past its manual gate: the wait is over, whoever told the promotion (a sharded
# replica owning none of the wave's clusters finds it started by their owners).
_PAST_MANUAL_GATE = frozenset(
    {Step.GATE_WAIT, Step.GATE_PROCEED, Step.GATE_STILL_HEALTHY, Step.GATE_HALT, Step.GATE_ROLLBACK}
)


class EventReporter:
    """Reports each ``PassEvent``. ``clients`` are the clusters connected so far (a mapping the pass
    keeps adding to); an event about no cluster in particular is written to each of them."""

    def __init__(
        self,
        metrics: SyncerMetrics,
        clients: Mapping[str, KubeApi],
        state_namespace: str,
        waves: Sequence[str] = (),
    ) -> None:
        self.metrics = metrics
        self.clients = clients
        self.state_namespace = state_namespace
        self.recorders: dict[str, EventRecorder] = {}
        self.awaited: dict[str, str] = {}  # the revision each wave's manual gate was last told of
        self.rollout = initial(waves)  # the policy's waves: ``syncer_wave_state`` projects it

    def _recorder(self, cluster: str) -> EventRecorder | None:
        if cluster not in self.recorders:
            client = self.clients.get(cluster)
            if client is None:
                return None
            self.recorders[cluster] = EventRecorder(client)
        return self.recorders[cluster]

    def _emit(self, cluster: str, reason: str, note: str, warning: bool) -> None:
        recorder = self._recorder(cluster)
        if recorder is not None:
            regarding = Regarding("v1", "ConfigMap", STATE_CONFIGMAP, self.state_namespace)
            recorder.emit(regarding, reason, note, warning=warning)

    def _awaiting(self, event: PassEvent) -> None:
        """``syncer_wave_awaiting_approval``: 1 for the revision a wave waits for, 0 once it is
        promoted or aborted, its gate judges it (it started), or another revision waits there
        instead."""
        gauge = self.metrics.wave_awaiting_approval
        before = self.awaited.get(event.wave, "")
        if before and before != event.revision:
            gauge.labels(wave=event.wave, revision=before).set(0)
        waiting = event.step is Step.AWAITING_PROMOTION
        gauge.labels(wave=event.wave, revision=event.revision).set(1 if waiting else 0)
        self.awaited[event.wave] = event.revision

    def settle(self, rebuilt: RolloutStatus) -> None:
        """``syncer_wave_state`` once a pass ended with ``rebuilt``, the rollout's status its
        clusters record (``syncer.domain.rollout_records``): what the records settle wins."""
        rollout = reconcile(self.rollout, rebuilt)
        if rollout != self.rollout:
            self.rollout = rollout
            self.metrics.show_rollout(rollout)

    def flush(self) -> None:
        """Write the Events of every series not yet written (before the process exits)."""
        for recorder in self.recorders.values():
            recorder.flush()

    def __call__(self, event: PassEvent) -> None:
        treatment = event.treatment
        if event.health is not None and event.cluster:
            self.metrics.cluster_healthy.labels(cluster=event.cluster).set(
                1 if event.health == "healthy" else 0
            )
        if event.cluster and event.step in _WINDOW_STEPS:
            self.metrics.cluster_window_open.labels(cluster=event.cluster).set(
                0 if event.step is Step.WINDOW_CLOSED else 1
            )
        if event.cluster and event.step in _APPLY_ERROR_STEPS:
            self.metrics.apply_errors.labels(cluster=event.cluster).inc()
        past_gate = event.step in _PAST_MANUAL_GATE and self.awaited.get(event.wave) == event.revision
        if event.wave and (event.step in _GATE_STEPS or past_gate):
            self._awaiting(event)
        if event.measurement is not None and event.cluster:
            self.metrics.measured(event.wave, event.cluster, event.measurement)
        level = logging.ERROR if treatment.error else logging.WARNING if treatment.warning else logging.INFO
        log.log(
            logging.DEBUG if treatment.quiet else level,
            "%s",
            event.step,
            extra={
                "wave": event.wave,
                "cluster": event.cluster,
                "revision": event.revision,
                "detail": event.detail,
            },
        )
        rollout = advance(self.rollout, event)
        if rollout != self.rollout:
            self.rollout = rollout
            self.metrics.show_rollout(rollout)
        if treatment.event_reason:
            note = ": ".join(part for part in (event.wave, event.detail) if part)
            targets = [event.cluster] if event.cluster else list(self.clients)
            for cluster in targets:
                self._emit(cluster, treatment.event_reason, note, treatment.warning)
