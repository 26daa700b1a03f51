"""RedisCluster and cluster health from status conditions and observedGeneration. [pure]

Owns: kstatus-style health verdicts from status values. Must not: fetch anything.
"""
