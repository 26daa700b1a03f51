"""A real ``syncer run`` process killed in the middle of a wave's analysis: the next one goes on from
the counts recorded in the cluster, against the fleet's real Prometheus."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from devfleet.prometheus import LocalPrometheus
from tests.integration.agent.drills import FAST, write_policy
from tests.integration.agent.procs import Agents
from tests.integration.agent.test_agent_process import Rig, agents, rig  # noqa: F401  (fixtures)
from tests.integration.analysis.kit import ERRORS_LABEL, live_exporter
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

COUNT = 8


def analysed(made: Rig, local: LocalPrometheus) -> str:
    """FAST's waves, the canary judged by ``error-rate`` (COUNT measurements, one every 2 s)."""
    query = f'max(analysis_test_errors{{cluster="${{cluster}}",namespace="{made.namespace}"}})'
    metric = {"name": "error-rate", "query": query, "interval": "2s", "count": COUNT}
    canary: dict[str, Any] = {
        **FAST["waves"][0],
        "analysis": {"metrics": [{**metric, "failureCondition": "result > 0.1"}]},
    }
    return write_policy(
        made,
        "analysed.yaml",
        {
            **FAST,
            "prometheus": {"url": local.url, "caFile": str(local.ca_file)},
            "waves": [canary, *FAST["waves"][1:]],
        },
    )


def commit(made: Rig, errors: str) -> str:
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": made.namespace, "labels": {ERRORS_LABEL: errors}},
    }
    sha = made.work.commit(
        "the namespace and its error rate", {"base/objects.yaml": yaml.safe_dump(namespace)}, sign=made.key
    )
    made.work.git("push", "-q", str(made.remote), "main")
    return sha


def test_an_agent_killed_mid_analysis_resumes_without_resetting_its_counts(
    rig: Rig,  # noqa: F811
    agents: Agents,  # noqa: F811
    running_prometheus: LocalPrometheus,
) -> None:
    with (
        live_exporter(running_prometheus, rig.namespace, rig.clients, rig.namespace),
        agents.shown_on_failure(),
    ):
        policy = analysed(rig, running_prometheus)
        revision = commit(rig, "0.01")
        first = agents.start("first", rig.args(policy, "--no-leader-elect"))

        def taken() -> int:
            return rig.states()["canary"].analysis.counts("error-rate").taken

        eventually("two measurements recorded on the canary", lambda: taken() >= 2, 180)
        first.kill()
        assert first.gone()
        at_kill = taken()
        assert 2 <= at_kill < COUNT, at_kill
        assert rig.states()["eu-1"].revision != revision, "the analysis had not ended"

        second = agents.start("second", rig.args(policy, "--no-leader-elect"))
        done = eventually("every cluster healthy", lambda: rig.all_healthy(revision), 180)
        counts = done["canary"].analysis.counts("error-rate")
        assert (counts.taken, counts.successes, counts.last_value) == (COUNT, COUNT, 0.01)
        measured = second.steps("analysis-measured")
        assert len(measured) == COUNT - at_kill, "the second agent took only the measurements left"
        assert {r.get("cluster") for r in measured} == {"canary"}
