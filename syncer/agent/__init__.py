"""The long-running agent: scheduled polls, drift checks, webhook, /metrics, /healthz, leader election.

Owns: when the engine runs. Must not: hold pipeline logic.
"""
