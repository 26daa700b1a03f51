"""The embedded RedisCluster controller: watch, queue, reconcile children, honest status, canary rollouts.

Owns: in-cluster reconciliation of RedisCluster objects -- the desired children (``children``), the
rollout state machine over StatefulSet partitions (``upgrade``), kstatus conditions (``status``), the
work queue, the I/O of one reconcile (``reconciler``, through the ``KubeApi`` seam only), the watch
loops and workers (``runner``), metrics and JSON logs. The Redis topology module (``topology``), and
the membership label that lets the client Service list only pods whose node is in the Redis
cluster (``membership``), are used only when the ``topology`` option is on. Must not: talk to git
or other clusters, or write defaults into a RedisCluster's spec.
"""
