"""A converging pass as the status sees it: a node left out stalls the RedisCluster with its reason."""

from __future__ import annotations

from syncer.controller.model import ClusterSpec
from syncer.controller.status import Observed, compute
from syncer.controller.topology_converge import ConvergeReport
from syncer.controller.topology_link import judged
from syncer.controller.topology_model import TopologyReport

LEFT_OUT = (
    "10.0.0.3:6379 (node cccccccccccc: 5 key(s), 8192 slot(s) of its own, 0 other node(s) known, epoch 1) "
    "is left out of the cluster: it holds 5 key(s) while the cluster serves 8192/16384 slots"
)


def test_a_node_left_out_stalls_the_cluster_naming_it() -> None:
    report = TopologyReport(healthy=False, cluster_state="fail", slots_covered=8192, expected_shards=2)
    result = ConvergeReport(report, False, problems=(LEFT_OUT,), refused=(LEFT_OUT,))
    found = judged(result, (), departing=False)
    assert found.problem is not None
    assert found.problem.reason == "NodesLeftOut"
    assert found.problem.message == LEFT_OUT

    spec = ClusterSpec(name="cache", namespace="ns", uid="u", generation=1, version="7.2")
    status = compute(Observed(spec, (), None, found.verdict, found.problem), {}, 0.0)
    stalled = next(c for c in status["conditions"] if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "NodesLeftOut")
    assert "10.0.0.3:6379" in stalled["message"]


def test_a_pass_without_outsiders_does_not_stall() -> None:
    report = TopologyReport(healthy=True, cluster_state="ok", slots_covered=16384, expected_shards=1)
    assert judged(ConvergeReport(report, False), (), departing=False).problem is None
