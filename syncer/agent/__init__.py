"""The long-running agent: scheduled polls, drift checks, webhook, /metrics, /healthz, the fleet page
(/ui), leader election.

Owns: when the engine runs (apscheduler jobs, the git webhook), the HTTP endpoints, who may roll
out (the leader lease, or for a replica of a shard group the clusters whose owner Leases it holds:
``sharding``), the counters of each pass and the read-only fleet page that shows them (``ui``,
``fleet_page``). Must not: hold pipeline logic; every pass is one call into the engine
(``FleetPass.run_pass``) and nothing of the agent runs until it returns; the page changes nothing.
"""
