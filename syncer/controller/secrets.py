"""Reading the Secrets a RedisCluster names (``spec.auth.secretRef`` and ``spec.tls.secretRef``).

Owns: the digest of their data (so rotating a Secret rolls the pods), the password and the TLS data,
and the stall cause when one is missing. Must not: write a Secret or log its data.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from syncer.controller import children
from syncer.controller.model import ClusterSpec
from syncer.controller.status import StallCause
from syncer.errors import NotFound
from syncer.kube import KubeApi


class MissingReference(Exception):
    """Something the spec names cannot be used: nothing can move until it changes (``problem``)."""

    def __init__(self, problem: StallCause) -> None:
        super().__init__(problem.message)
        self.problem = problem


@dataclass(frozen=True)
class SecretsRead:
    """``digest`` of the referenced Secrets' data ("" when none is named), the ``password`` and the
    TLS Secret's data (base64, as the Secret holds it)."""

    digest: str
    password: str | None
    tls: dict[str, str]


def read_secrets(kube: KubeApi, spec: ClusterSpec) -> SecretsRead:
    """The Secrets ``spec`` names, read through ``kube``; ``MissingReference`` when one or its key is
    missing."""
    data: dict[str, Any] = {}
    password = None
    for field, ref in (("auth", spec.auth), ("tls", spec.tls)):
        if ref is None:
            continue
        try:
            secret = kube.get("v1", "Secret", ref.name, spec.namespace)
        except NotFound as err:
            where = f"Secret {spec.namespace}/{ref.name} named by spec.{field}.secretRef"
            raise MissingReference(StallCause("SecretNotFound", f"{where} does not exist")) from err
        data[field] = secret.get("data") or {}
        if field == "auth":
            if ref.key not in data[field]:
                message = (
                    f"Secret {spec.namespace}/{ref.name} has no key {ref.key!r} (spec.auth.secretRef.key)"
                )
                raise MissingReference(StallCause("SecretKeyNotFound", message))
            password = base64.b64decode(data[field][ref.key]).decode(errors="replace")
    return SecretsRead(children.digest(data) if data else "", password, dict(data.get("tls") or {}))
