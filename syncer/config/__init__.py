"""Agent configuration and policies (trust, rollout) as frozen dataclasses, and the settings root.

Owns: loading and validating the agent's own files at the edge (``load_agent_config``,
``load_trust_policy``, ``load_rollout_policy``); every problem is a ``ConfigError`` naming the file.
``settings`` holds every knob of how the agent runs, each default stated once. Must not: read the fleet
repository (trust never comes from the repo being verified) or talk to clusters.

Names are imported from their modules when first used, so that importing one module of the
package (``syncer.config.settings``) does not load the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syncer.config.agent import (
        AgentConfig,
        ClusterAccess,
        GitCredentials,
        SourceOptions,
        load_agent_config,
    )
    from syncer.config.trust import (
        ALL_PATHS,
        KeyKind,
        Signer,
        TrustPolicy,
        VerifyMode,
        load_trust_policy,
        parse_trust_policy,
        ssh_fingerprint,
    )

_HOME = {
    "AgentConfig": "syncer.config.agent",
    "ClusterAccess": "syncer.config.agent",
    "GitCredentials": "syncer.config.agent",
    "SourceOptions": "syncer.config.agent",
    "load_agent_config": "syncer.config.agent",
    "ALL_PATHS": "syncer.config.trust",
    "KeyKind": "syncer.config.trust",
    "Signer": "syncer.config.trust",
    "TrustPolicy": "syncer.config.trust",
    "VerifyMode": "syncer.config.trust",
    "load_trust_policy": "syncer.config.trust",
    "parse_trust_policy": "syncer.config.trust",
    "ssh_fingerprint": "syncer.config.trust",
}

__all__ = [
    "ALL_PATHS",
    "AgentConfig",
    "ClusterAccess",
    "GitCredentials",
    "KeyKind",
    "Signer",
    "SourceOptions",
    "TrustPolicy",
    "VerifyMode",
    "load_agent_config",
    "load_trust_policy",
    "parse_trust_policy",
    "ssh_fingerprint",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
