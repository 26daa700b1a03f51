"""A package's names imported from their modules when first used, not when the package is imported.

Owns: the module-level ``__getattr__`` (PEP 562) a package's ``__init__`` installs so that importing
one of its modules, or the package, does not load its other modules. Must not: import anything of
syncer; it sits below every layer, so that each package may use it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_getattr(package: str, homes: Mapping[str, tuple[str, ...]]) -> Callable[[str], object]:
    """The ``__getattr__`` of ``package``: each name listed under a submodule in ``homes`` (``{"trust":
    ("TrustPolicy", ...)}`` for ``package.trust``) is imported from it on first use and kept in the
    package, so that later uses are plain attribute reads. Any other name is an ``AttributeError``."""
    home_of = {name: f"{package}.{module}" for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> object:
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
