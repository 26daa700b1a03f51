"""An agent config naming a fleet's clusters, for the commands people run against them (``syncer
retry``, ``abort``, ``promote``, ``rollback``): those talk to the clusters only, never to the source."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from syncer.agent.service import Writing
from syncer.leader.fence import NO_LEASE, everywhere

UNLEASED = Writing(fences=everywhere(NO_LEASE))
"""How an agent writes that holds no Lease (as ``--no-leader-elect`` runs it)."""


def acts_config(root: Path, kubeconfig: Path, clusters: Iterable[str]) -> Path:
    """``root/agent.yaml`` naming ``clusters`` (contexts of ``kubeconfig``) with an open trust policy
    beside it; its source URL is never contacted by a person's command."""
    (root / "trust.yaml").write_text("mode: head\nopenpgpKeys: []\nsigners: []\n")
    named = {n: {"context": n, "kubeconfig": str(kubeconfig)} for n in clusters}
    config = {
        "source": {"url": "https://git.example/fleet.git"},
        "trustPolicy": "trust.yaml",
        "clusters": named,
    }
    (root / "agent.yaml").write_text(yaml.safe_dump(config))
    return root / "agent.yaml"
