"""The rollout policy: canary waves by percentage of the fleet, with gates between them.

The policy is the agent's own file (``policies/rollout.yaml`` by default). Percentages are cumulative
shares of the fleet: ``[1, 10, 50, 100]`` means the first wave holds about 1% of the clusters (at
least one), the first two waves together about 10%, and so on until the last wave completes the fleet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from syncer.analysis import AnalysisPolicy
from syncer.config.analysis import parse_analysis, parse_prometheus
from syncer.config.loading import Fields, load_yaml_file
from syncer.config.shapes import parse_selector
from syncer.config.templates import FILE_KEY, TEMPLATES_KEY, Template, parse_templates
from syncer.config.windows import MaintenanceWindow, parse_window
from syncer.domain.durations import parse_duration
from syncer.domain.selectors import LabelSelector

__all__ = [
    "MaintenanceWindow",
    "RolloutPolicy",
    "WaveGate",
    "WavePolicy",
    "load_rollout_policy",
    "parse_rollout_policy",
]


@dataclass(frozen=True)
class WaveGate:
    """How one wave is rolled out and judged.

    ``max_concurrent``: clusters applied at once; ``health_timeout``: seconds the wave may take to
    become healthy after it was applied; ``bake``: seconds it must then stay healthy before the next
    wave starts; ``manual`` (``approval: manual``): the wave does not start until a person promotes
    the waiting revision (``syncer promote``), after the previous wave passed.
    ``analysis``: the metrics it is then judged by (none: health and bake alone).
    """

    max_concurrent: int = 5
    health_timeout: float = 600.0
    bake: float = 120.0
    manual: bool = False
    analysis: AnalysisPolicy = field(default_factory=AnalysisPolicy)


@dataclass(frozen=True)
class WavePolicy:
    """One wave: its name, cumulative percentage, optional selector pinning clusters to it, gate."""

    name: str
    percent: float
    selector: LabelSelector | None = None
    gate: WaveGate = WaveGate()


@dataclass(frozen=True)
class RolloutPolicy:
    """The waves in order, whether a failed wave is put back on the last good revision, and the
    maintenance windows that say when clusters may change (none: always). ``background``
    (``analysis.background``): metrics measured on every cluster on the revision from the canary's
    apply until the last wave passes, whose failure fails the rollout like a wave's analysis
    (none: no background analysis). ``rollback_checks``
    (``rollbackChecks``): whether a rollback, automatic or a person's ``syncer rollback``, is baked
    and analysed like a new revision; by default it waits only for health, so that going back is as
    fast as the clusters become healthy."""

    waves: tuple[WavePolicy, ...]
    rollback: bool = True
    windows: tuple[MaintenanceWindow, ...] = ()
    rollback_checks: bool = False
    background: AnalysisPolicy = field(default_factory=AnalysisPolicy)

    @staticmethod
    def single_wave() -> RolloutPolicy:
        return RolloutPolicy((WavePolicy("all", 100.0),))


def _duration(fields: Fields, key: str, default: float) -> float:
    if not fields.has(key):
        return default
    try:
        return parse_duration(fields.raw(key))
    except ValueError as err:
        raise fields.error(key, str(err)) from err


def _gate(fields: Fields, base: WaveGate, templates: Mapping[str, Template]) -> WaveGate:
    max_concurrent = fields.number("maxConcurrent", base.max_concurrent)
    if max_concurrent != int(max_concurrent):
        raise fields.error("maxConcurrent", "must be a whole number")
    return WaveGate(
        max_concurrent=int(max_concurrent),
        health_timeout=_duration(fields, "healthTimeout", base.health_timeout),
        bake=_duration(fields, "bake", base.bake),
        manual=_manual(fields, base.manual),
        analysis=parse_analysis(fields.child("analysis"), base.analysis, templates),
    )


_APPROVALS = {"auto": False, "manual": True}


def _manual(fields: Fields, default: bool) -> bool:
    """``approval: manual`` (a person promotes the wave) or ``auto`` (the gate alone decides)."""
    if not fields.has("approval"):
        return default
    value = fields.raw("approval")
    if not isinstance(value, str) or value not in _APPROVALS:
        raise fields.error("approval", f"must be one of auto, manual, not {value!r}")
    return _APPROVALS[value]


def parse_rollout_policy(data: dict[str, Any], origin: str, base: Path | None = None) -> RolloutPolicy:
    """Validate an already-parsed rollout policy; every problem is a ``ConfigError`` naming ``origin``;
    the files it names are relative to ``base`` (None: the working directory)."""
    return _rollout_policy(Fields(data, origin=origin), base)


def _rollout_policy(top: Fields, base: Path | None) -> RolloutPolicy:
    top.reject_unknown(
        {
            "waves",
            "defaults",
            "rollback",
            "rollbackChecks",
            "windows",
            "prometheus",
            "analysis",
            TEMPLATES_KEY,
            FILE_KEY,
        }
    )
    templates = parse_templates(top, base)
    defaults_fields = top.child("defaults")
    defaults_fields.reject_unknown({"maxConcurrent", "healthTimeout", "bake", "approval", "analysis"})
    prometheus = parse_prometheus(top, base)
    defaults = _gate(defaults_fields, WaveGate(analysis=prometheus), templates)
    waves: list[WavePolicy] = []
    entries = top.items("waves")
    if not entries:
        raise top.error("waves", "at least one wave is required")
    for index in range(len(entries)):
        wave = top.child("waves", index)
        wave.reject_unknown(
            {"name", "percent", "selector", "maxConcurrent", "healthTimeout", "bake", "approval", "analysis"}
        )
        percent = wave.number("percent", 0) if wave.has("percent") else None
        if percent is None or percent > 100:
            raise wave.error("percent", "is required: a number above 0 and at most 100")
        if waves and percent < waves[-1].percent:
            raise wave.error("percent", f"{percent:g} is less than the previous wave's {waves[-1].percent:g}")
        selector = parse_selector(wave.child("selector")) if wave.has("selector") else None
        name = wave.string("name", f"wave-{index + 1}")
        waves.append(WavePolicy(name, percent, selector, _gate(wave, defaults, templates)))
    if waves[-1].percent != 100:
        raise top.error("waves", "the last wave must reach percent: 100 so that the whole fleet is covered")
    if len({w.name for w in waves}) != len(waves):
        raise top.error("waves", "wave names must be unique")
    windows = tuple(parse_window(top.child("windows", i), i) for i in range(len(top.items("windows"))))
    if len({w.name for w in windows}) != len(windows):
        raise top.error("windows", "window names must be unique")
    return RolloutPolicy(
        tuple(waves),
        rollback=top.boolean("rollback", True),
        windows=windows,
        rollback_checks=top.boolean("rollbackChecks", False),
        background=_background(top.child("analysis"), prometheus, templates),
    )


def _background(
    fields: Fields, prometheus: AnalysisPolicy, templates: Mapping[str, Template]
) -> AnalysisPolicy:
    """The policy's ``analysis.background``: metrics and templates as a wave's analysis writes them,
    checked the same way (none: no background analysis)."""
    fields.reject_unknown({"background"})
    return parse_analysis(fields.child("background"), prometheus, templates)


def load_rollout_policy(path: Path) -> RolloutPolicy:
    """The rollout policy in ``path``; ``ConfigError`` naming the file and key for any problem."""
    return _rollout_policy(Fields.of(load_yaml_file(path)), path.parent)
