"""Agent configuration and policies (trust, rollout) as frozen dataclasses.

Owns: loading and validating the agent's own files at the edge. Must not: read the fleet repository
(trust never comes from the repo being verified) or talk to clusters.
"""
