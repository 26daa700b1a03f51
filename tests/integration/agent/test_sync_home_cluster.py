"""``syncer sync --once`` of an agent config whose clusters each name their own kubeconfig, with no
``--kubeconfig``, ``$KUBECONFIG`` or ``~/.kube/config``: the Lease's home cluster is the config's
first cluster, and the pass syncs (it failed: "kubeconfig , context '': Invalid kube-config file")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.agent.drills import write_policy
from tests.integration.agent.test_agent_process import Rig, rig
from tests.integration.agent.test_notifications_e2e import ONE_WAVE, _namespace_only

pytestmark = pytest.mark.integration
__all__ = ["rig"]  # fixtures


def test_sync_once_with_per_cluster_kubeconfigs_holds_the_lease_in_the_first_cluster(
    rig: Rig, tmp_path: Path
) -> None:
    policy = write_policy(rig, "one-wave.yaml", ONE_WAVE)
    revision = _namespace_only(rig, "home")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config either
    command = [sys.executable, "-m", "syncer", "sync", "--once", "--config", str(rig.root / "agent.yaml")]
    command += ["--rollout-policy", str(rig.root / policy), "--state-namespace", rig.state_namespace]
    command += ["--lease-namespace", rig.lease_namespace]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False, env=env)
    assert done.returncode == 0, done.stderr
    assert rig.all_healthy(revision), rig.states()
    # The Lease is in the first cluster of the config (canary), where the pass held it.
    lease = rig.clients["canary"].get("coordination.k8s.io/v1", "Lease", "syncer-agent", rig.lease_namespace)
    assert lease["metadata"]["name"] == "syncer-agent"
