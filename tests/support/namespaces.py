"""The one way tests remove the namespaces they made: from every cluster given, gone already is fine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from syncer.errors import NotFound
from syncer.kube import KubeApi


def delete_namespaces(clients: Iterable[KubeApi], *names: str) -> None:
    """Delete each of ``names`` in each cluster of ``clients`` (a namespace already gone is fine)."""
    for client in clients:
        for name in names:
            with contextlib.suppress(NotFound):
                client.delete("v1", "Namespace", name)
