"""Kubeconfigs are read through the strict reader at every client made: a FIFO is refused at once, a
YAML alias bomb is refused, relative file paths resolve against the file, $KUBECONFIG merges as
kubectl does, and the kubernetes client is given the data."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import yaml

from syncer.errors import ConfigError
from syncer.kube.client import ClusterClient
from syncer.kube.kubeconfig import read_kubeconfig


def _config(name: str, server: str, **cluster: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, **cluster}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "users": [{"name": name, "user": {"token": "t"}}],
        "current-context": name,
    }


def test_a_fifo_as_kubeconfig_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "kubeconfig"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def make() -> None:
        try:
            ClusterClient.from_kubeconfig(str(fifo), "eu-1")
        except ConfigError as err:
            done.append(err)

    thread = threading.Thread(target=make, daemon=True)
    thread.start()
    thread.join(5)
    assert not thread.is_alive(), "reading the kubeconfig hung on a FIFO"
    assert done
    assert "not a regular file (a FIFO)" in str(done[0])


def test_an_alias_bomb_is_refused_with_its_place(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]"
        for i in range(9)
    ]
    bomb = tmp_path / "kubeconfig"
    bomb.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"kubeconfig .*kubeconfig:\d+:\d+: .*alias"):
        read_kubeconfig(str(bomb))


def test_relative_files_resolve_against_the_kubeconfig_and_the_client_gets_them(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "ca.crt").write_text("not a certificate, only a path\n")
    path = folder / "kubeconfig"
    path.write_text(
        yaml.safe_dump(_config("eu-1", "https://127.0.0.1:6443", **{"certificate-authority": "ca.crt"}))
    )
    data = read_kubeconfig(str(path))
    assert data["clusters"][0]["cluster"]["certificate-authority"] == str(folder / "ca.crt")
    client = ClusterClient.from_kubeconfig(str(path), "eu-1")
    try:
        assert client._api.configuration.host == "https://127.0.0.1:6443"
        assert client._api.configuration.ssl_ca_cert == str(folder / "ca.crt")
    finally:
        client.close()


def test_kubeconfig_files_merge_first_wins_and_missing_ones_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.write_text(yaml.safe_dump(_config("eu-1", "https://127.0.0.1:1")))
    clash = _config("eu-1", "https://127.0.0.1:2")
    other = _config("us-1", "https://127.0.0.1:3")
    for section in ("clusters", "contexts", "users"):
        clash[section] += other[section]  # type: ignore[operator]
    second.write_text(yaml.safe_dump(clash))
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "missing"), str(first), str(second)]))
    data = read_kubeconfig("")
    assert [c["cluster"]["server"] for c in data["clusters"]] == [
        "https://127.0.0.1:1",
        "https://127.0.0.1:3",
    ]
    assert data["current-context"] == "eu-1"


def test_a_missing_context_names_the_file_and_the_context(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(_config("eu-1", "https://127.0.0.1:1")))
    with pytest.raises(ConfigError, match=f"kubeconfig {path}, context 'nope': "):
        ClusterClient.from_kubeconfig(str(path), "nope")


def test_no_kubeconfig_at_all_is_named_without_empty_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        ClusterClient.from_kubeconfig("", "")
    said = str(caught.value)
    assert str(tmp_path / ".kube" / "config") in said
    assert "kubeconfig ," not in said
    assert "''" not in said
