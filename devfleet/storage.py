"""Volumes for the local fleet: kwok runs no storage provisioner, so each cluster gets StorageClasses
without a provisioner and a pool of pre-made PersistentVolumes that claims bind to.

Classes: ``standard`` (the default) and ``fast-ssd``; per class ``VOLUMES_PER_CLASS`` volumes of
``VOLUME_SIZE``. Nothing is ever mounted: kwok's pods do not run containers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

CLASSES = ("standard", "fast-ssd")
VOLUMES_PER_CLASS = 48
VOLUME_SIZE = "100Gi"


def _create(call: Callable[[Any], object], body: Any) -> None:
    try:
        call(body)
    except ApiException as err:
        if err.status != 409:
            raise


def provision(api_client: client.ApiClient, volumes: int = VOLUMES_PER_CLASS) -> None:
    """Create the StorageClasses and ``volumes`` volumes of each (already existing objects are left as
    they are, so a larger pool can be asked for later)."""
    storage_api = client.StorageV1Api(api_client)
    core = client.CoreV1Api(api_client)
    for name in CLASSES:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if name == "standard" else {}
        _create(
            storage_api.create_storage_class,
            client.V1StorageClass(
                metadata=client.V1ObjectMeta(name=name, annotations=annotations),
                provisioner="kubernetes.io/no-provisioner",
                volume_binding_mode="Immediate",
                reclaim_policy="Delete",
            ),
        )
        for index in range(volumes):
            _create(
                core.create_persistent_volume,
                client.V1PersistentVolume(
                    metadata=client.V1ObjectMeta(
                        name=f"{name}-{index:03d}", labels={"devfleet.syncer.dev/pool": name}
                    ),
                    spec=client.V1PersistentVolumeSpec(
                        capacity={"storage": VOLUME_SIZE},
                        access_modes=["ReadWriteOnce"],
                        storage_class_name=name,
                        persistent_volume_reclaim_policy="Retain",
                        host_path=client.V1HostPathVolumeSource(path=f"/var/lib/devfleet/{name}-{index:03d}"),
                    ),
                ),
            )
