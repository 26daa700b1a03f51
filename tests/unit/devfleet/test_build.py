from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from devfleet import build


def test_pins_are_read_from_the_committed_wrapper_modules() -> None:
    pins = build.Pins.read()
    assert pins.kubernetes.startswith("v1.34.")
    assert pins.etcd.startswith("v3.6.")
    assert pins.kwok.startswith("v0.")
    assert pins.helm.startswith("v3.")


def test_kubernetes_binaries_are_stamped_with_the_pinned_version() -> None:
    pins = build.Pins("v1.34.4", "v3.6.4", "v0.7.0", "v3.22.0")
    ldflags = pins.k8s_ldflags()
    assert "-X k8s.io/component-base/version.gitVersion=v1.34.4" in ldflags
    assert "-X k8s.io/component-base/version.gitMinor=34" in ldflags


def test_every_staging_module_is_pinned_by_replace() -> None:
    go_mod = (build.CONTROL_PLANE_MODULE / "go.mod").read_text()
    kubernetes = build.Pins.read().kubernetes
    staging_version = "v0." + kubernetes.removeprefix("v1.")
    for module in ("k8s.io/api", "k8s.io/apiserver", "k8s.io/client-go", "k8s.io/kube-scheduler"):
        assert f"{module} => {module} {staging_version}" in go_mod


def test_the_cache_directory_changes_when_a_pin_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYNCER_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "go"
    shutil.copytree(build.GO_DIR, copy)
    monkeypatch.setattr(build, "GO_DIR", copy)
    monkeypatch.setattr(build, "CONTROL_PLANE_MODULE", copy / "controlplane")
    monkeypatch.setattr(build, "KWOK_MODULE", copy / "kwok")
    monkeypatch.setattr(build, "HELM_MODULE", copy / "helm")
    before = build.bin_dir()
    assert before.is_relative_to(tmp_path / "cache" / "k8s")
    assert build.bin_dir() == before
    with (copy / "kwok" / "go.sum").open("a") as handle:
        handle.write("example.org/changed v1.0.0 h1:AAAA=\n")
    assert build.bin_dir() != before
