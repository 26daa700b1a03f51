"""Pure value types shared by every stage: object keys, manifests, desired fleets, changes.

Owns: frozen dataclasses and string enums. Must not: import anything that does I/O or any other
syncer package but syncer.errors.
"""

from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey, api_group
from syncer.domain.selectors import LabelSelector

__all__ = ["ClusterManifests", "DesiredFleet", "LabelSelector", "Manifest", "ObjectKey", "api_group"]
