"""Records are evidence, not authority: a cluster's sync state naming a commit the repository does not
hold (a forged or corrupt ConfigMap) bounds nothing.

The revision gate leaves such commits out of the history check and the base of a tip's checks
(``syncer.source.GitSource.holds``: a commit this cache lacks is fetched from the remote by its id
first, so a commit a force push left behind still refuses a force push back); here, before a pass
rolls out, each cluster recording one is taken as recording nothing there: its state forgets the
commit (as applied and as last good), keeps it as ``unknown_record`` (shown by ``syncer status`` and
the page) and is written so, and the revision in force goes to it like to any cluster. The evidence
is dropped once the cluster runs another revision than the one the pass rolled out then.
"""

from __future__ import annotations

from collections.abc import Collection, MutableMapping
from dataclasses import replace

from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, SyncPhase, UnknownRecord


def _forgotten(state: ClusterSyncState, unknown: Collection[str], note: UnknownRecord) -> ClusterSyncState:
    revision_unknown = state.revision in unknown
    return replace(
        state,
        revision="" if revision_unknown else state.revision,
        phase=SyncPhase.NEVER if revision_unknown else state.phase,
        last_good="" if state.last_good in unknown else state.last_good,
        unknown_record=note,
    )


def ignore_unknown(
    states: MutableMapping[str, ClusterSyncState],
    unsaved: MutableMapping[str, str],
    unknown: Collection[str],
    in_force: str,
    context: tuple[Listener, float],
) -> None:
    """Take each cluster of ``states`` recording a commit of ``unknown`` as recording nothing there
    (see the module docstring), marked ``unsaved`` so that the pass writes it; tell each one. Forget
    the evidence of a cluster that runs another revision than the one it was taken to. ``context``:
    the listener and the time now."""
    listener, now = context
    for name, state in sorted(states.items()):
        found = next((r for r in (state.revision, state.last_good) if r and r in unknown), "")
        if found:
            note = UnknownRecord(found, now, in_force)
            states[name] = _forgotten(state, unknown, note)
            unsaved[name] = note.describe()
            why = f"{note.describe()}: ignored for the history check, the base and the revision in force"
            listener(PassEvent(Step.RECORD_UNKNOWN, state.wave, name, found, reason=why))
            continue
        recorded = state.unknown_record
        if recorded.active and state.revision and state.revision != recorded.in_force:
            states[name] = replace(state, unknown_record=UnknownRecord())
