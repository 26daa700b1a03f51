"""The analysis templates shipped in policies/ load, and each is turned on by name alone."""

from __future__ import annotations

import shutil
from pathlib import Path

from syncer.analysis import Baseline
from syncer.config.rollout import load_rollout_policy

SHIPPED = Path(__file__).parents[3] / "policies" / "analysis-templates.yaml"
NAMES = (
    "reconcile-success-rate",
    "reconcile-p95-duration",
    "redis-rejected-connections",
    "redis-evicted-keys",
)


def test_each_shipped_template_is_turned_on_by_name_with_its_defaults(tmp_path: Path) -> None:
    shutil.copy(SHIPPED, tmp_path / "analysis-templates.yaml")
    uses = "".join(f"          - name: {name}\n" for name in NAMES)
    (tmp_path / "rollout.yaml").write_text(
        'prometheus: {url: "https://prometheus.example:9090"}\n'
        "analysisTemplatesFile: analysis-templates.yaml\n"
        "waves:\n  - name: all\n    percent: 100\n    analysis:\n      templates:\n" + uses
    )
    [wave] = load_rollout_policy(tmp_path / "rollout.yaml").waves
    metrics = {m.name: m for m in wave.gate.analysis.metrics}
    assert tuple(metrics) == NAMES
    rate = metrics["reconcile-success-rate"]
    assert rate.baseline is Baseline.PREVIOUS
    assert rate.success is not None
    assert rate.success.source == "result >= 0.99 && result >= baseline - 0.01"
    assert (rate.interval, rate.count) == (60.0, 3)
    # A just-Ready pod has no series yet: a first measurement at once would be inconclusive.
    assert all(m.initial_delay == 60.0 for m in metrics.values())
    for name in ("redis-rejected-connections", "redis-evicted-keys"):
        success = metrics[name].success
        assert success is not None
        assert success.reads_list, "judged on every Redis pod's series"
        assert success.source == "result.all(s, s.value <= 0.0)"
    assert all('cluster="${cluster}"' in m.query for m in metrics.values())
