"""The notifier: a pass-event listener that classifies each event (``classify``), routes the notice
to the receivers of the config, folds duplicates (``folding``) and hands each request to the
receiver's courier (``delivery``). Telling it an event never waits on a network."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from syncer.config.notifications import NotificationConfig
from syncer.config.reach import Resolve, refusal, system_resolve
from syncer.domain.progress import PassEvent
from syncer.errors import SyncerError
from syncer.notify.classify import Classifier
from syncer.notify.delivery import Count, Courier
from syncer.notify.folding import Folder
from syncer.notify.payloads import request_for

log = logging.getLogger("syncer.notify")

RESULTS = ("sent", "failed", "dropped", "folded", "refused")
"""The ``result`` label values of ``syncer_notifications_total``."""


def _every_event(_: PassEvent) -> bool:
    return True


class Notifier:
    """Tells the receivers of ``config`` about pass events; ``contexts`` is each cluster's kubeconfig
    context (for the commands in a message), ``count`` counts each receiver's results. ``tells``
    says which events are this agent's to tell (all of them, but for a sharded replica: every
    replica sees the waves' events, one tells them)."""

    def __init__(
        self,
        config: NotificationConfig,
        contexts: Mapping[str, str],
        count: Count,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.count = count
        self.clock = clock
        self.classifier = Classifier(config.settings, contexts)
        self.folder = Folder(config.settings.fold_window)
        # Where a host resolves is judged at each send; ``resolve`` may be replaced (tests).
        self.resolve: Resolve = system_resolve
        self.couriers = {
            name: Courier(name, config.settings, count, self._refusal) for name in config.receivers
        }
        self._lock = threading.Lock()  # events come from the pass and from the guard's threads
        self.tells: Callable[[PassEvent], bool] = _every_event

    def _refusal(self, url: str) -> str:
        return refusal(url, self.config.allow_hosts, self.resolve)

    def __call__(self, event: PassEvent) -> None:
        if not self.tells(event):
            return
        try:
            with self._lock:
                self._tell(event)
        except (SyncerError, ValueError, KeyError, TypeError) as err:
            # A notice that cannot be made must not stop the pass that told it.
            log.error("no notification for %s: %s", event.step, err)

    def _tell(self, event: PassEvent) -> None:
        now = self.clock()
        notice = self.classifier.notice(event, now)
        if notice is None:
            return
        for receiver in self.config.receivers_for(notice.kind, notice.severity):
            request = request_for(notice, receiver)
            if request is None:
                continue
            if not self.folder.admit(receiver.name, notice.fold_key, now):
                self.count(receiver.name, "folded")
                continue
            self.couriers[receiver.name].post(notice.summary, request)

    def close(self, timeout: float) -> None:
        """Send what is queued within ``timeout`` seconds in all, then stop every courier."""
        deadline = time.monotonic() + timeout
        for courier in self.couriers.values():
            courier.close(max(0.0, deadline - time.monotonic()))
