"""Packages whose names are imported when first used (``syncer.lazy``): every exported name is the one
of its module, unknown names are an ``AttributeError``, and importing a package or one of its modules
loads none of the others."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

from syncer.lazy import lazy_getattr

LAZY_PACKAGES = (
    "syncer.config",
    "syncer.domain",
    "syncer.engine",
    "syncer.guards",
    "syncer.kube",
    "syncer.rollout",
)


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_each_exported_name_is_the_object_of_its_module(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        value = getattr(module, name)
        owner = getattr(value, "__module__", None)
        if owner and owner.startswith(package + "."):
            assert getattr(importlib.import_module(owner), name) is value, (package, name)
        assert vars(module)[name] is value, (package, name)  # kept: the next read does not come back


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_an_unknown_name_is_an_attribute_error_naming_the_package(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        module.no_such_name  # noqa: B018 (the read is the test)


def test_a_name_whose_module_is_missing_fails_naming_that_module() -> None:
    package = types.ModuleType("syncer_lazy_probe")
    sys.modules[package.__name__] = package
    try:
        getter = lazy_getattr(package.__name__, {"nowhere": ("thing",)})
        with pytest.raises(ModuleNotFoundError, match=r"syncer_lazy_probe\.nowhere"):
            getter("thing")
        with pytest.raises(AttributeError, match="has no attribute 'other'"):
            getter("other")
    finally:
        del sys.modules[package.__name__]


def test_importing_a_package_or_one_module_loads_none_of_the_others() -> None:
    probe = (
        "import sys, importlib\n"
        "for name in sys.argv[1:]:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.startswith('syncer.') and m.count('.') > 1))\n"
    )
    cases = {
        ("syncer.config",): "[]",
        ("syncer.domain",): "[]",
        ("syncer.rollout",): "[]",
        ("syncer.guards.verdicts",): "['syncer.guards.verdicts']",
        ("syncer.engine",): "[]",
    }
    for modules, loaded in cases.items():
        out = subprocess.run(
            [sys.executable, "-c", probe, *modules], capture_output=True, text=True, check=True
        ).stdout
        assert out.strip() == loaded, (modules, out)
