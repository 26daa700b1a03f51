"""The embedded RedisCluster controller: watch, queue, reconcile children, honest status.

Owns: in-cluster reconciliation of RedisCluster objects. Must not: talk to git or other clusters.
"""
