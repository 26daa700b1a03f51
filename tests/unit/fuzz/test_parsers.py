"""Property tests over every parser of input syncer reads: only syncer's own errors may escape.

The inputs come from a fleet repository (strict YAML, fleet.yaml, manifests, overlays), from the
agent's own files (trust policy, rollout policy, agent config) and from what git and gpg print. The
example counts are bounded (see ``conftest.py``) so that the whole harness stays well under a minute.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from syncer.agent.http import signature_ok
from syncer.bounded.strict_yaml import load_yaml
from syncer.config import load_agent_config, load_trust_policy
from syncer.config.rollout import load_rollout_policy, parse_rollout_policy
from syncer.config.trust import parse_trust_policy
from syncer.errors import ConfigError, ManifestError
from syncer.manifests import LoadOptions, load_fleet
from syncer.verify.status import parse_gpg_status, parse_ssh_check, signature_header_problem
from tests.unit.fuzz.strategies import HUGE_NUMBERS, documents, raised_by, yaml_text

FLEET_KEYS = [
    "apiVersion",
    "kind",
    "defaults",
    "namespace",
    "clusters",
    "name",
    "labels",
    "shared",
    "path",
    "selector",
    "matchLabels",
]
MANIFEST_KEYS = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "labels",
    "spec",
    "shards",
    "version",
    "replicasPerShard",
    "persistence",
    "rolloutStrategy",
    "steps",
    "percent",
]
PATCH_KEYS = ["patches", "target", "kind", "name", "namespace", "patch", "op", "path", "value", "from"]
TRUST_KEYS = [
    "mode",
    "allowHistoryRewrite",
    "signers",
    "openpgpKeys",
    "name",
    "openpgp",
    "ssh",
    "paths",
    "file",
    "armored",
]
ROLLOUT_KEYS = [
    "waves",
    "defaults",
    "rollback",
    "name",
    "percent",
    "selector",
    "matchLabels",
    "matchExpressions",
    "maxConcurrent",
    "healthTimeout",
    "bake",
    "key",
    "operator",
    "values",
]
AGENT_KEYS = [
    "source",
    "url",
    "branch",
    "cacheDir",
    "timeoutSeconds",
    "credentials",
    "sshKeyFile",
    "tokenFile",
    "knownHostsFile",
    "tokenUser",
    "trustPolicy",
    "clusters",
    "context",
    "kubeconfig",
]
SMALL = LoadOptions(max_files=50, max_events=20_000, max_nodes=2_000, max_documents=20)
VALID_FLEET = yaml.safe_dump(
    {"apiVersion": "syncer.dev/v1alpha1", "kind": "Fleet", "clusters": [{"name": "eu-1"}]}
)


@given(yaml_text(MANIFEST_KEYS))
@example("a: &x [*x]\n")
@example('k: "\\u202e"\n')
@example("\ufeff--- !!python/object:os.system\n")
@example("shards: " + HUGE_NUMBERS[0] + "\n")
def test_strict_yaml_reports_problems_and_never_raises(text: str) -> None:
    loaded = load_yaml(text, "f.yaml", SMALL)
    for found in loaded.problems:
        assert str(found).startswith("f.yaml")


def _render(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        err = raised_by(lambda: load_fleet(root, "fuzz", SMALL), ManifestError)
        assert err is None or (isinstance(err, ManifestError) and err.problems)


@given(yaml_text(FLEET_KEYS))
def test_any_fleet_yaml_is_a_fleet_or_manifest_problems(text: str) -> None:
    _render({"fleet.yaml": text})


@given(yaml_text(MANIFEST_KEYS), yaml_text(MANIFEST_KEYS))
@example("spec:\n  shards: " + HUGE_NUMBERS[0] + "\n", "")
def test_any_manifest_is_objects_or_manifest_problems(shared: str, own: str) -> None:
    _render({"fleet.yaml": VALID_FLEET, "base/a.yaml": shared, "clusters/eu-1/b.yaml": own})


@given(yaml_text(PATCH_KEYS))
def test_any_overlay_is_patches_or_manifest_problems(patches: str) -> None:
    manifest = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "redis"}})
    _render({"fleet.yaml": VALID_FLEET, "base/a.yaml": manifest, "clusters/eu-1/patches.yaml": patches})


def _config_file(text: str, name: str, check: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        (Path(tmp) / "trust.yaml").write_text("mode: head\n")
        err = raised_by(lambda: check(path), ConfigError)
        assert err is None or str(err)


@given(documents(TRUST_KEYS))
def test_any_trust_policy_mapping_is_a_policy_or_a_config_error(data: Any) -> None:
    mapping = data if isinstance(data, dict) else {"signers": data}
    err = raised_by(
        lambda: parse_trust_policy(mapping, origin="t.yaml", base_dir=Path("/nonexistent")), ConfigError
    )
    assert err is None or str(err).startswith("t.yaml")


@given(yaml_text(TRUST_KEYS))
@example("allowHistoryRewrite: " + HUGE_NUMBERS[1] + "\n")
def test_any_trust_policy_file_is_a_policy_or_a_config_error(text: str) -> None:
    _config_file(text, "policy.yaml", load_trust_policy)


@given(documents(ROLLOUT_KEYS))
def test_any_rollout_policy_mapping_is_a_policy_or_a_config_error(data: Any) -> None:
    mapping = data if isinstance(data, dict) else {"waves": data}
    err = raised_by(lambda: parse_rollout_policy(mapping, "r.yaml"), ConfigError)
    assert err is None or str(err).startswith("r.yaml")


@given(yaml_text(ROLLOUT_KEYS))
@example("waves:\n  - percent: " + HUGE_NUMBERS[0] + "\n")
def test_any_rollout_policy_file_is_a_policy_or_a_config_error(text: str) -> None:
    _config_file(text, "rollout.yaml", load_rollout_policy)


@given(yaml_text(AGENT_KEYS))
@example("source: {url: x, timeoutSeconds: " + HUGE_NUMBERS[2] + "}\n")
def test_any_agent_config_file_is_a_config_or_a_config_error(text: str) -> None:
    _config_file(text, "agent.yaml", load_agent_config)


@given(st.text(max_size=300), st.binary(max_size=300), st.sampled_from(["sha1", "sha256"]))
def test_signature_reports_of_git_and_gpg_always_parse(text: str, raw: bytes, algorithm: str) -> None:
    parse_gpg_status(text)
    parse_gpg_status("\n".join(f"[GNUPG:] {line}" for line in text.splitlines()))
    parse_ssh_check(text)
    signature_header_problem(raw, algorithm)


@given(st.text(max_size=20), st.binary(max_size=64), st.text(max_size=40), st.text(max_size=80))
# Found by this harness: a non-ASCII X-Hub-Signature-256 header made hmac.compare_digest raise.
@example("s3cret", b"{}", "", "sha256=\u00e9")
def test_webhook_signatures_are_checked_without_raising(
    secret: str, body: bytes, authorization: str, hub_signature: str
) -> None:
    assert signature_ok(secret, body, authorization, hub_signature) in {True, False}
    assert signature_ok(secret, body, "", f"sha256={hub_signature}") in {True, False}
