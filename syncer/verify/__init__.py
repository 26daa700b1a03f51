"""Commit signature verification with git under a pinned environment (OpenPGP and SSH). [I/O]

Owns: deciding whether a revision is trusted under the agent's trust policy, per commit, with
path-scoped signers. Must not: take any trust from the repository it verifies.
"""
