from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from devfleet import components, kwok_stages


def stages() -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for doc in yaml.safe_load_all(kwok_stages.STAGES)}


def expressions(stage: dict[str, Any]) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {
        e["key"]: (e["operator"], tuple(e.get("values", ())))
        for e in stage["spec"]["selector"]["matchExpressions"]
    }


def test_every_stage_is_a_kwok_pod_stage() -> None:
    found = stages()
    assert set(found) == {
        "pod-ready",
        "pod-hold-not-ready",
        "pod-turn-not-ready",
        "pod-complete",
        "pod-delete",
    }
    for stage in found.values():
        assert stage["apiVersion"] == "kwok.x-k8s.io/v1alpha1"
        assert stage["kind"] == "Stage"
        assert stage["spec"]["resourceRef"] == {"apiGroup": "v1", "kind": "Pod"}


def test_only_pods_without_the_hold_label_are_made_ready() -> None:
    found = stages()
    key = f'.metadata.labels["{kwok_stages.HOLD_LABEL}"]'
    assert expressions(found["pod-ready"])[key] == ("DoesNotExist", ())
    assert expressions(found["pod-hold-not-ready"])[key] == ("Exists", ())
    assert expressions(found["pod-turn-not-ready"])[key] == ("Exists", ())
    assert expressions(found["pod-turn-not-ready"])[".status.containerStatuses.[].ready"] == ("In", ("true",))
    for name in ("pod-hold-not-ready", "pod-turn-not-ready"):
        text = found[name]["spec"]["next"]["statusTemplate"]
        kept = [
            line for line in text.splitlines() if not line.strip().startswith("{{") and "IPWith" not in line
        ]
        rendered = "\n".join(kept).replace("{{ $now | Quote }}", "now").replace("{{ .image | Quote }}", "img")
        template = yaml.safe_load(rendered.replace("{{ .name | Quote }}", "c"))
        ready = [c for c in template["conditions"] if c["type"] == "Ready"]
        assert ready == [
            {"lastTransitionTime": "now", "status": "False", "reason": "HeldNotReady", "type": "Ready"}
        ]


def test_kwok_gets_the_stages_as_its_config(tmp_path: Path) -> None:
    path = kwok_stages.write(tmp_path / "c" / "kwok-stages.yaml")
    argv = components.kwok_argv(Path("bin"), components.ClusterFiles(Path("c")), path)
    assert argv[-1] == f"--config={path}"
    assert path.read_text() == kwok_stages.STAGES
    assert not any(
        a.startswith("--config")
        for a in components.kwok_argv(Path("bin"), components.ClusterFiles(Path("c")))
    )
