"""The fleet picture one agent process keeps for its page (``/ui``): folded from the pass's events as
they happen and from the states each pass ends with (``syncer.status.fleet_view``), with the signer
and subject of the revision the revision gate took. Readers wait for a newer picture; the page's
server-sent events are those waits.

It observes only: nothing here changes what a pass does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from syncer.config.trace_links import TraceLinks
from syncer.domain.progress import PassEvent
from syncer.domain.rollout_status import RolloutStatus
from syncer.engine.fleet_pass import PassResult
from syncer.engine.revision import PreparedRevision
from syncer.status.fleet_view import (
    FleetView,
    RevisionView,
    fold_event,
    fold_revisions,
    fold_rollout,
    fold_states,
    initial,
)


def revision_view(prepared: PreparedRevision | None, sha: str) -> RevisionView:
    """``sha`` named by the verified commit the gate prepared (its signer and subject), when the
    gate's revision is ``sha``; the bare commit id otherwise."""
    if prepared is None or prepared.revision != sha:
        return RevisionView(sha)
    commit = next((c for c in prepared.verification.commits if c.commit == sha), None)
    if commit is None:
        return RevisionView(sha)
    return RevisionView(sha, commit.signer, commit.subject)


class FleetPage:
    """The picture, behind a lock; ``prepared`` says which revision the gate holds now."""

    def __init__(
        self,
        waves: Iterable[str],
        clusters: Iterable[str],
        prepared: Callable[[], PreparedRevision | None],
        trace_links: TraceLinks = TraceLinks(),
    ) -> None:
        self._prepared = prepared
        self._view = initial(waves, clusters, trace_links)
        self._changed = threading.Condition()
        self._closed = False

    @property
    def view(self) -> FleetView:
        with self._changed:
            return self._view

    def _set(self, view: FleetView) -> None:
        # The caller holds the condition.
        self._view = view
        self._changed.notify_all()

    def tell(self, event: PassEvent) -> None:
        """A pass's event, as it happens."""
        with self._changed:
            view = fold_event(self._view, event)
            rolling = view.rolling
            if rolling is not None and rolling is not self._view.rolling:
                view = fold_revisions(view, view.in_force, revision_view(self._prepared(), rolling.sha))
            self._set(view)

    def after_pass(self, result: PassResult, rollout: RolloutStatus | None = None) -> None:
        """What a pass ended with: the clusters' states and histories, those it could not use, the
        rollout's status they record, and the revision in force once it is on every cluster (then
        nothing is rolling out)."""
        with self._changed:
            view = fold_states(self._view, result.states, result.unreachable, result.histories)
            if rollout is not None:
                view = fold_rollout(view, rollout)
            report = result.report
            if result.synced and report is not None:
                view = fold_revisions(view, revision_view(self._prepared(), report.revision), None)
            self._set(view)

    def wait_newer(self, version: int, timeout: float) -> FleetView | None:
        """The picture once its version is past ``version``, or None after ``timeout`` seconds or
        when the page is closed."""
        with self._changed:
            self._changed.wait_for(lambda: self._closed or self._view.version > version, timeout)
            return None if self._closed or self._view.version <= version else self._view

    @property
    def closed(self) -> bool:
        with self._changed:
            return self._closed

    def close(self) -> None:
        """Wake and end every waiting reader (the process is stopping)."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
