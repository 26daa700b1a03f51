"""Pass events made visible: a log record, the wave's state in ``syncer_wave_state`` and, where the
step has an Event reason, a Kubernetes Event about each cluster's sync-state ConfigMap.

What each step gets is said once, in ``syncer.domain.progress.TREATMENTS``; this module only carries
it out. It decides nothing about the rollout.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from syncer.domain.progress import PassEvent, Step
from syncer.kube import KubeApi
from syncer.kube.events import EventRecorder, Regarding
from syncer.status.metrics import SyncerMetrics
from syncer.status.state_store import STATE_CONFIGMAP

log = logging.getLogger("syncer.agent")

_WINDOW_STEPS = frozenset({Step.WINDOW_OPEN, Step.WINDOW_CLOSED, Step.WINDOW_OVERRIDDEN})


class EventReporter:
    """Reports each ``PassEvent``. ``clients`` are the clusters connected so far (a mapping the pass
    keeps adding to); an event about no cluster in particular is written to each of them."""

    def __init__(self, metrics: SyncerMetrics, clients: Mapping[str, KubeApi], state_namespace: str) -> None:
        self.metrics = metrics
        self.clients = clients
        self.state_namespace = state_namespace
        self.recorders: dict[str, EventRecorder] = {}

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
        if event.measurement is not None and event.cluster:
            self.metrics.measured(event.wave, event.cluster, event.measurement)
        level = logging.WARNING if treatment.warning else logging.INFO
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
        state = event.wave_state
        if state is not None:
            self.metrics.set_wave(event.wave, state)
        if treatment.event_reason:
            note = ": ".join(part for part in (event.wave, event.detail) if part)
            targets = [event.cluster] if event.cluster else list(self.clients)
            for cluster in targets:
                self._emit(cluster, treatment.event_reason, note, treatment.warning)
