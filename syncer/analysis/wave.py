"""A wave's analysis decided from each cluster's metric verdicts: the wave goes on only when every
metric that decides succeeded on every cluster; a dry-run metric is told, never decides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from syncer.analysis.model import MetricSpec
from syncer.domain.analysis import AnalysisVerdict


@dataclass(frozen=True)
class MetricStanding:
    """Where one metric stands on one cluster, why, and when it is next measured (epoch seconds)."""

    metric: MetricSpec
    verdict: AnalysisVerdict
    reason: str
    due: float = 0.0


@dataclass(frozen=True)
class WaveAnalysisVerdict:
    """The wave's analysis: ``verdict`` (running: wait ``wait`` seconds), why, the clusters that
    failed or were inconclusive (each with why), and what the dry-run metrics found."""

    verdict: AnalysisVerdict
    reason: str
    wait: float = 0.0
    clusters: tuple[tuple[str, str], ...] = ()
    dry_run: str = ""


def judge_analysis(standings: Mapping[str, tuple[MetricStanding, ...]], now: float) -> WaveAnalysisVerdict:
    """The wave's verdict from each cluster's ``standings``: failed when a deciding metric failed
    anywhere, else inconclusive when one was inconclusive anywhere, else running while any metric
    (dry runs too, so that they are measured in full) runs, else successful."""
    failed: dict[str, list[str]] = {}
    inconclusive: dict[str, list[str]] = {}
    dry: list[str] = []
    due: list[float] = []
    for cluster, metrics in sorted(standings.items()):
        for standing in metrics:
            said = f"{standing.metric.name}: {standing.reason}"
            if standing.verdict is AnalysisVerdict.RUNNING:
                due.append(standing.due)
            elif standing.metric.dry_run:
                if standing.verdict is not AnalysisVerdict.SUCCESSFUL:
                    dry.append(
                        f"{cluster}: {standing.metric.name} {standing.verdict} (dry run): {standing.reason}"
                    )
            elif standing.verdict is AnalysisVerdict.FAILED:
                failed.setdefault(cluster, []).append(said)
            elif standing.verdict is AnalysisVerdict.INCONCLUSIVE:
                inconclusive.setdefault(cluster, []).append(said)
    dry_run = "; ".join(dry)
    for verdict, found in ((AnalysisVerdict.FAILED, failed), (AnalysisVerdict.INCONCLUSIVE, inconclusive)):
        if found:
            clusters = tuple((name, f"analysis {verdict}: " + "; ".join(why)) for name, why in found.items())
            reason = "; ".join(f"{name}: {why}" for name, why in clusters)
            return WaveAnalysisVerdict(verdict, reason, clusters=clusters, dry_run=dry_run)
    if due:
        wait = max(0.0, min(due) - now)
        return WaveAnalysisVerdict(
            AnalysisVerdict.RUNNING, f"analysis running: next measurement in {wait:.0f}s", wait
        )
    count = sum(len(m) for m in standings.values())
    reason = f"analysis successful ({count} metric verdict(s))" + (f"; {dry_run}" if dry_run else "")
    return WaveAnalysisVerdict(AnalysisVerdict.SUCCESSFUL, reason, dry_run=dry_run)
