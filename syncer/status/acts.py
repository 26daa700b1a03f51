"""A person's acts on a cluster, recorded in the cluster beside its sync state, where the memory lives.

A window override (``syncer override-window``), a retry of failed revisions (``syncer retry``), a
suspension (``syncer suspend`` / ``resume``), a promotion past a manual gate (``syncer promote``), an
abort (``syncer abort``) and a pin (``syncer rollback`` / ``resume``) each live under their own key of
the sync-state ConfigMap and their own field manager: the agent's state writes never drop them,
every replica's next pass (or its next state write, ``with_acts``) sees them, and they work with the
agent down.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

from syncer.config.settings import AGENT_NAMESPACE
from syncer.domain.gates import Abort, PromotedBy, Promotion
from syncer.domain.sync_state import ClusterSyncState, Pin, RetryRequest, Suspension
from syncer.errors import NotFound
from syncer.kube import ApplyOptions, KubeApi
from syncer.status import record_fields as fields

STATE_CONFIGMAP = "syncer-sync-state"
OVERRIDE_KEY = "window-override.json"
OVERRIDE_FIELD_MANAGER = "syncer-window-override"
RETRY_KEY = "retry.json"
RETRY_FIELD_MANAGER = "syncer-retry"
SUSPENSION_KEY = "suspension.json"
SUSPENSION_FIELD_MANAGER = "syncer-suspend"
PROMOTION_KEY = "promotion.json"
PROMOTION_FIELD_MANAGER = "syncer-promote"
ABORT_KEY = "abort.json"
ABORT_FIELD_MANAGER = "syncer-abort"
PIN_KEY = "pin.json"
PIN_FIELD_MANAGER = "syncer-rollback"
ACT_KEYS = (OVERRIDE_KEY, RETRY_KEY, SUSPENSION_KEY, PROMOTION_KEY, ABORT_KEY, PIN_KEY)
ACT_FIELDS = ("window_override", "window_override_until", "retry", "suspension", "promotion", "abort", "pin")
"""The fields of a ``ClusterSyncState`` that are a person's acts, never encoded with the state."""


def _override(configmap: Mapping[str, Any]) -> tuple[str, float]:
    """The window override recorded beside the state (its own key and field manager, so that the
    agent's writes of the state never drop it); ("", 0) when none or unreadable."""
    text = (configmap.get("data") or {}).get(OVERRIDE_KEY, "")
    try:
        raw = json.loads(text) if text else {}
        reason, until = raw.get("reason", ""), raw.get("until", 0)
    except (ValueError, AttributeError):
        return "", 0.0
    if not isinstance(reason, str) or isinstance(until, bool) or not isinstance(until, int | float):
        return "", 0.0
    return reason, float(until)


def _named_act(configmap: Mapping[str, Any], key: str) -> tuple[str, str, str, float]:
    """The revision, who, why and when of a person's act recorded under ``key``; ("", "", "", 0)
    when absent. ValueError (or AttributeError) when unreadable: the caller decides what that
    means for its act."""
    text = (configmap.get("data") or {}).get(key, "")
    raw = json.loads(text) if text else {}
    return (
        fields.text(raw, "revision"),
        fields.text(raw, "by"),
        fields.text(raw, "reason"),
        fields.number(raw, "at"),
    )


def _retry(configmap: Mapping[str, Any]) -> RetryRequest:
    """The person's retry recorded beside the state (its own key and field manager); none when
    absent or unreadable."""
    try:
        return RetryRequest(*_named_act(configmap, RETRY_KEY))
    except (ValueError, AttributeError):
        return RetryRequest()


def _suspension(configmap: Mapping[str, Any]) -> Suspension:
    """The person's suspension recorded beside the state; none when absent. An unreadable record
    counts as a suspension (fail closed: someone meant to stop the cluster)."""
    text = (configmap.get("data") or {}).get(SUSPENSION_KEY, "")
    if not text:
        return Suspension()
    try:
        raw = json.loads(text)
        return Suspension(
            fields.text(raw, "reason"),
            fields.text(raw, "by"),
            fields.number(raw, "at"),
            fields.text(raw, "resumed"),
        )
    except (ValueError, AttributeError):
        return Suspension(f"unreadable {SUSPENSION_KEY}: taken as suspended", "", 0.0)


def _promotion(configmap: Mapping[str, Any]) -> Promotion:
    """The promotion recorded beside the state; none when absent or unreadable (fail closed: an
    unreadable record opens no gate)."""
    text = (configmap.get("data") or {}).get(PROMOTION_KEY, "")
    try:
        raw = json.loads(text) if text else {}
        promoters = raw.get("promoters", [])
        if not isinstance(promoters, list):
            raise ValueError("promoters must be a list")
        return Promotion(
            fields.text(raw, "wave"),
            fields.text(raw, "revision"),
            tuple(
                PromotedBy(fields.text(a, "by"), fields.number(a, "at"), fields.text(a, "reason"))
                for a in promoters
            ),
        )
    except (ValueError, AttributeError):
        return Promotion()


def _abort(configmap: Mapping[str, Any]) -> Abort:
    """The abort recorded beside the state; none when absent or unreadable (it names no revision)."""
    try:
        return Abort(*_named_act(configmap, ABORT_KEY))
    except (ValueError, AttributeError):
        return Abort()


def _pin(configmap: Mapping[str, Any]) -> tuple[Pin, Suspension]:
    """The person's pin recorded beside the state; none when absent. An unreadable record holds the
    cluster as a suspension does (fail closed: someone meant to keep it where it is)."""
    if not (configmap.get("data") or {}).get(PIN_KEY, ""):
        return Pin(), Suspension()
    try:
        return Pin(*_named_act(configmap, PIN_KEY)), Suspension()
    except (ValueError, AttributeError):
        return Pin(), Suspension(f"unreadable {PIN_KEY}: taken as suspended", "", 0.0)


def with_acts(state: ClusterSyncState, configmap: Mapping[str, Any]) -> ClusterSyncState:
    """``state`` with the person's acts ``configmap`` records beside it (window override, retry,
    suspension, promotion, abort, pin): they are never the agent's to decide, so the ConfigMap as read
    says what they are."""
    reason, until = _override(configmap)
    pin, unreadable = _pin(configmap)
    suspension = _suspension(configmap)
    return replace(
        state,
        window_override=reason,
        window_override_until=until,
        retry=_retry(configmap),
        suspension=unreadable if unreadable.active and not suspension.active else suspension,
        pin=pin,
        promotion=_promotion(configmap),
        abort=_abort(configmap),
    )


class PersonActs:
    """Records a person's acts on one cluster (see the module docstring)."""

    def __init__(self, kube: KubeApi, namespace: str = AGENT_NAMESPACE) -> None:
        self.kube = kube
        self.namespace = namespace

    def record_window_override(self, reason: str, until: float) -> None:
        """Let the cluster change outside its maintenance windows until ``until`` (epoch seconds),
        for ``reason``; an empty reason clears it."""
        value = {"reason": reason, "until": until if reason else 0}
        self._record_act(OVERRIDE_KEY, OVERRIDE_FIELD_MANAGER, value)

    def record_retry(self, request: RetryRequest) -> None:
        """Let the failures recorded before ``request.at`` (of ``request.revision``, or of any revision)
        be tried again."""
        self._record_act(RETRY_KEY, RETRY_FIELD_MANAGER, asdict(request))

    def record_suspension(self, suspension: Suspension) -> None:
        """Stop every change syncer makes to the cluster (``suspension.reason`` set) or let them go on
        again (empty reason: ``syncer resume``)."""
        self._record_act(SUSPENSION_KEY, SUSPENSION_FIELD_MANAGER, asdict(suspension))

    def record_promotion(self, promotion: Promotion) -> None:
        """Let ``promotion.revision`` past the manual gate of ``promotion.wave`` (once enough distinct
        people approved it)."""
        self._record_act(PROMOTION_KEY, PROMOTION_FIELD_MANAGER, asdict(promotion))

    def record_abort(self, abort: Abort) -> None:
        """Stop ``abort.revision``: its wave in flight is rolled back and it is refused until a retry."""
        self._record_act(ABORT_KEY, ABORT_FIELD_MANAGER, asdict(abort))

    def record_pin(self, pin: Pin) -> None:
        """Keep the cluster on ``pin.revision`` and off every newer one (``syncer rollback``), or let
        it follow the revision in force again (an empty pin: ``syncer resume``)."""
        self._record_act(PIN_KEY, PIN_FIELD_MANAGER, asdict(pin))

    def _record_act(self, key: str, field_manager: str, value: Mapping[str, Any]) -> None:
        """Record a person's act beside the state, under its own key and field manager: the agent's
        state writes keep it, and every replica's next pass (or its next state write) sees it."""
        self._ensure_namespace()
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": STATE_CONFIGMAP, "namespace": self.namespace},
            "data": {key: json.dumps(value, sort_keys=True)},
        }
        self.kube.apply(body, ApplyOptions(field_manager=field_manager, force=True))

    def _ensure_namespace(self) -> None:
        try:
            self.kube.get("v1", "Namespace", self.namespace)
        except NotFound:
            body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            self.kube.apply(body, ApplyOptions(field_manager=SUSPENSION_FIELD_MANAGER))
