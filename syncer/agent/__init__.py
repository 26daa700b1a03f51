"""The long-running agent: scheduled polls, drift checks, webhook, /metrics, /healthz, leader election.

Owns: when the engine runs (apscheduler jobs, the git webhook), the HTTP endpoints and who may roll
out (the leader lease). Must not: hold pipeline logic; every sync is one call into the engine.
"""
