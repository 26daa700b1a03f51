"""Golden fixtures: each directory under golden/ holds a RedisCluster and every child it renders to.

Set SYNCER_UPDATE_GOLDEN=1 to rewrite the expected files after an intended change, then review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.controller import children
from syncer.controller.model import ANNOTATION_TEMPLATE_HASH, LABEL_MEMBER, ClusterSpec, parse

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def spec_of(case: str) -> ClusterSpec:
    return parse(yaml.safe_load((GOLDEN / case / "rediscluster.yaml").read_text()))


def render(spec: ClusterSpec) -> list[dict[str, Any]]:
    bodies = children.shared_children(spec)
    for shard in range(spec.shards):
        template = children.pod_template(spec, shard, "secrethash" if spec.secret_names() else "")
        bodies.append(children.stateful_set(spec, shard, template, 0))
    return bodies


@pytest.mark.parametrize("case", CASES)
def test_children_match_the_golden_files(case: str) -> None:
    rendered = render(spec_of(case))
    expected_file = GOLDEN / case / "expected.yaml"
    if os.environ.get("SYNCER_UPDATE_GOLDEN"):
        expected_file.write_text(yaml.safe_dump_all(rendered, sort_keys=True))
    assert rendered == list(yaml.safe_load_all(expected_file.read_text()))


@pytest.mark.parametrize("case", CASES)
def test_every_child_is_owned_by_the_cluster_and_labelled(case: str) -> None:
    spec = spec_of(case)
    for body in render(spec):
        meta = body["metadata"]
        assert meta["namespace"] == spec.namespace
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "redis.syncer.dev/v1alpha1",
                "kind": "RedisCluster",
                "name": spec.name,
                "uid": spec.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert meta["labels"]["app.kubernetes.io/instance"] == spec.name
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "syncer-controller"


def test_the_template_hash_follows_what_makes_pods_differ() -> None:
    spec = spec_of("minimal")
    base = children.template_hash(children.pod_template(spec, 0))
    assert base == children.template_hash(children.pod_template(spec, 1))  # shards share one template shape
    other = {
        "version": ClusterSpec(**{**spec.__dict__, "version": "7.4"}),
        "config": ClusterSpec(**{**spec.__dict__, "redis_config": (("maxmemory", "1gb"),)}),
        "labels": ClusterSpec(**{**spec.__dict__, "pod_labels": {"a": "b"}}),
    }
    hashes = {name: children.template_hash(children.pod_template(s, 0)) for name, s in other.items()}
    assert base not in hashes.values()
    assert len(set(hashes.values())) == 3
    assert children.template_hash(children.pod_template(spec, 0, "s1")) != base  # a rotated Secret rolls pods
    scaled = ClusterSpec(**{**spec.__dict__, "shards": 5, "replicas_per_shard": 3})
    assert children.template_hash(children.pod_template(scaled, 0)) == base  # scaling does not


def test_the_hash_annotation_is_not_part_of_what_it_hashes() -> None:
    template = children.pod_template(spec_of("full"), 0)
    assert template["metadata"]["annotations"][ANNOTATION_TEMPLATE_HASH] == children.template_hash(template)
    assert len(children.template_hash(template)) == 16


def test_redis_conf_puts_user_directives_last_and_tls_instead_of_the_plain_port() -> None:
    conf = children.redis_conf(spec_of("full")).splitlines()
    assert "port 0" in conf
    assert "tls-port 6379" in conf
    assert conf[-2:] == ["maxmemory 900mb", "maxmemory-policy allkeys-lru"]
    assert "port 6379" in children.redis_conf(spec_of("minimal")).splitlines()


def test_only_the_client_service_selects_members_and_no_pod_starts_as_one() -> None:
    spec = spec_of(CASES[0])
    bodies = children.shared_children(spec, members_only=True)
    template = children.pod_template(spec, 0)
    bodies.append(children.stateful_set(spec, 0, template, 0))
    client = next(b for b in bodies if b["kind"] == "Service" and b["metadata"]["name"] == spec.name)
    assert client["spec"]["selector"] == {**children.selector(spec), LABEL_MEMBER: "true"}
    others = [b for b in bodies if b is not client]
    for body in others:
        selects = (body.get("spec") or {}).get("selector") or {}
        assert LABEL_MEMBER not in selects.get("matchLabels", selects), body["metadata"]["name"]
    assert LABEL_MEMBER not in template["metadata"]["labels"]
    plain = children.client_service(spec)
    assert plain["spec"]["selector"] == children.selector(spec)
