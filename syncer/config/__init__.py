"""Agent configuration and policies (trust, rollout) as frozen dataclasses, and the settings root.

Owns: loading and validating the agent's own files at the edge (``load_agent_config``,
``load_trust_policy``, ``load_rollout_policy``), each read by the rules of ``syncer.bounded`` (type and
size checked before reading, strict YAML); every problem is a ``ConfigError`` naming the file and line.
``settings`` holds every knob of how the agent runs, each default stated once. Must not: read the fleet
repository (trust never comes from the repo being verified) or talk to clusters.

Names are imported when first used (``syncer.lazy``), so that ``syncer.config.settings`` can be imported
without the rest of the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncer.lazy import lazy_getattr

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

__getattr__ = lazy_getattr(
    __name__,
    {
        "agent": ("AgentConfig", "ClusterAccess", "GitCredentials", "SourceOptions", "load_agent_config"),
        "trust": (
            "ALL_PATHS",
            "KeyKind",
            "Signer",
            "TrustPolicy",
            "VerifyMode",
            "load_trust_policy",
            "parse_trust_policy",
            "ssh_fingerprint",
        ),
    },
)

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
