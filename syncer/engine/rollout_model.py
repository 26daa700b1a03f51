"""The options and results of a fleet rollout: how a revision is rolled out and how that ended."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from syncer.apply import ApplyPolicy
from syncer.config.rollout import RolloutPolicy
from syncer.config.settings import AGENT_NAMESPACE, HEALTH_POLL, HISTORY_KEEP
from syncer.config.two_person import TwoPersonRule
from syncer.domain.changeset import ChangeSet
from syncer.engine.analysis_gate import QueryFn, query_prometheus
from syncer.engine.diff import DiffOptions
from syncer.leader.fence import FenceOf
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome


@dataclass(frozen=True)
class RolloutOptions:
    """How a revision is rolled out; ``health_poll`` is the longest wait between two health checks;
    ``two_person`` are the trust policy's two-person rules (a cluster rule also says how many people
    promote a wave of its clusters past a manual gate).;
    ``history_keep`` how many entries each cluster's history keeps, ``actor`` who the history says
    applied (this agent replica)."""

    rollout: RolloutPolicy = field(default_factory=RolloutPolicy.single_wave)
    apply: ApplyPolicy = field(default_factory=ApplyPolicy)
    diff: DiffOptions = field(default_factory=DiffOptions)
    state_namespace: str = AGENT_NAMESPACE
    health_poll: float = HEALTH_POLL
    two_person: tuple[TwoPersonRule, ...] = ()
    history_keep: int = HISTORY_KEEP
    actor: str = ""


def _every_cluster(_: str) -> bool:
    return True


def _never() -> bool:
    return False


def _always(revision: str, recorded: str) -> bool:
    return True


def _unknown_signer(_: str) -> str:
    return ""


@dataclass(frozen=True)
class RolloutHooks:
    """What a rollout asks outside itself, given whole when it is built; ``fences`` has no default
    (a writer built without a Lease says so: ``NO_LEASE``).

    ``owns(cluster)``: whether this replica may write to a cluster now (a sharded replica applies,
    checks and records only those; the others' progress is what their owner recorded); ``sharded``
    says the fleet is split. ``fences(cluster)``: the fence each cluster's state writes carry.
    ``newer()``: asked between waves (and by a sharded replica's waiting gate), True when a newer
    verified revision takes over. ``admits(revision, recorded)``: whether a revision may replace what
    a cluster records (it descends from it, or rewrites are allowed). ``signer(revision)``: the trust
    policy's name of who signed a verified revision ("" when not known), for the clusters' history;
    ``query(source, promql, at)``: how a wave's analysis asks Prometheus."""

    fences: FenceOf
    owns: Callable[[str], bool] = _every_cluster
    sharded: bool = False
    newer: Callable[[], bool] = _never
    admits: Callable[[str, str], bool] = _always
    signer: Callable[[str], str] = _unknown_signer
    query: QueryFn = query_prometheus


@dataclass(frozen=True)
class WaveReport:
    """What happened to one wave: the gate's last decision and why, each cluster's change set, and
    the clusters the gate found failed, each with why."""

    name: str
    clusters: tuple[str, ...]
    decision: Decision
    reason: str
    change_sets: tuple[ChangeSet, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RolloutReport:
    """How a sync ended. ``unsaved`` names the clusters whose sync state could not be written (their
    apiserver did not answer) with the last error: what they store is older than what happened."""

    revision: str
    outcome: RolloutOutcome
    waves: tuple[WaveReport, ...] = ()
    message: str = ""
    unsaved: tuple[tuple[str, str], ...] = ()
