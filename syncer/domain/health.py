"""Health verdicts, as the health stage computes them and the rollout gate reads them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Health(StrEnum):
    """``healthy``: Ready at the current generation. ``progressing``: not there yet (or not observed
    yet). ``degraded``: the controller reports it cannot get there (Stalled). ``missing``: the object
    is not in the cluster."""

    HEALTHY = "healthy"
    PROGRESSING = "progressing"
    DEGRADED = "degraded"
    MISSING = "missing"


# Worst first: a cluster is as healthy as its least healthy object.
_SEVERITY = {Health.DEGRADED: 3, Health.MISSING: 2, Health.PROGRESSING: 1, Health.HEALTHY: 0}


def worst(verdicts: list[Health]) -> Health:
    return max(verdicts, key=_SEVERITY.__getitem__, default=Health.HEALTHY)


@dataclass(frozen=True)
class ObjectHealth:
    """The health of one object, with the reason and message that explain it."""

    subject: str
    health: Health
    reason: str = ""
    message: str = ""

    def __str__(self) -> str:
        detail = f": {self.reason}" if self.reason else ""
        detail += f" ({self.message})" if self.message else ""
        return f"{self.subject} {self.health}{detail}"


@dataclass(frozen=True)
class ClusterHealth:
    """The health of one cluster: the worst of its objects', and every object's verdict."""

    cluster: str
    health: Health
    objects: tuple[ObjectHealth, ...] = ()

    @property
    def unhealthy(self) -> tuple[ObjectHealth, ...]:
        return tuple(o for o in self.objects if o.health is not Health.HEALTHY)

    def summary(self) -> str:
        bad = self.unhealthy
        if not bad:
            return f"{self.cluster}: {len(self.objects)} object(s) healthy"
        shown = "; ".join(str(o) for o in bad[:3])
        more = f"; and {len(bad) - 3} more" if len(bad) > 3 else ""
        return f"{self.cluster}: {shown}{more}"
