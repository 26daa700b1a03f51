"""devfleet: a local fleet of real Kubernetes control planes for development and tests.

Owns: building pinned kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok from the
Go module proxy into a cache outside the repository; starting N clusters on 127.0.0.1 with TLS,
client-certificate auth and RBAC; kubeconfigs; stopping exactly what it started. Must not: be imported
by the ``syncer`` package; syncer talks to these clusters like to any other, through a kubeconfig.
"""
