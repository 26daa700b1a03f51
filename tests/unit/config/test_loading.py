"""Every file of the agent goes by the rules of the manifest loader: a duplicate key, an integer beyond
64 bits, an alias bomb, a FIFO, a device, a directory or an oversize file is a ConfigError naming the
file (and the line where there is one), never a value taken silently, a traceback or a hang."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from syncer.agent.loop import read_secret
from syncer.config import load_agent_config, load_trust_policy
from syncer.config.guards import load_guard_policy
from syncer.config.rollout import load_rollout_policy
from syncer.config.settings import MAX_CONFIG_FILE_BYTES, MAX_KUBECONFIG_BYTES
from syncer.errors import ConfigError

ARMORED = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ\n-----END PGP PUBLIC KEY BLOCK-----\n"
BIG = "1" * 5000
BOMB = "".join(
    ["a: &a [x, x, x, x, x, x, x, x, x]\n"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)]
)


def loaded_within(load: Callable[[], object], seconds: float = 5.0) -> BaseException | None:
    """What ``load`` raised (None when it returned), on a thread that may not outlive ``seconds``, so
    that a loader waiting on a FIFO fails the test instead of hanging it."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            load()
        except BaseException as err:
            outcome.append(err)
        else:
            outcome.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still loading after {seconds} s"
    return outcome[0]


def config_error(load: Callable[[], object]) -> str:
    raised = loaded_within(load)
    assert isinstance(raised, ConfigError), repr(raised)
    return str(raised)


def agent_files(tmp_path: Path, agent: str = "", trust: str = "mode: head\n") -> Path:
    (tmp_path / "trust.yaml").write_text(trust)
    (tmp_path / "agent.yaml").write_text(
        agent or "source:\n  url: https://git.example.org/f.git\ntrustPolicy: trust.yaml\n"
    )
    return tmp_path / "agent.yaml"


def load_rollout(path: Path) -> Callable[[], object]:
    return lambda: load_rollout_policy(path)


# -- duplicate keys, one case per kind of file and per section that has its own parser ---------------

DUPLICATES = [
    ("trust.yaml", load_trust_policy, "mode: strict\nsigners: []\nmode: head\n", 3, "mode", 1),
    (
        "trust.yaml",
        load_trust_policy,
        "twoPersonRules:\n  - name: prod\n    paths: ['clusters/**']\n    name: other\n",
        4,
        "name",
        2,
    ),
    (
        "agent.yaml",
        load_agent_config,
        "source:\n  url: https://a.example.org/f.git\n  url: https://b.example.org/f.git\n"
        "trustPolicy: t.yaml\n",
        3,
        "url",
        2,
    ),
    ("rollout.yaml", load_rollout_policy, "waves:\n  - percent: 100\n    percent: 10\n", 3, "percent", 2),
    (
        "rollout.yaml",
        load_rollout_policy,
        "waves: [{percent: 100}]\nwindows:\n  - kind: deny\n    schedule: '0 1 * * *'\n"
        "    duration: 1h\n    kind: allow\n",
        6,
        "kind",
        3,
    ),
    ("guards.yaml", load_guard_policy, "rules: []\nlimits: []\nrules: []\n", 3, "rules", 1),
]


@pytest.mark.parametrize("case", DUPLICATES, ids=[f"{c[0]}-{c[4]}" for c in DUPLICATES])
def test_a_duplicate_key_is_refused_with_file_and_line(
    tmp_path: Path, case: tuple[str, Callable[[Path], object], str, int, str, int]
) -> None:
    name, load, text, line, key, first = case
    path = tmp_path / name
    path.write_text(text)

    message = config_error(lambda: load(path))

    assert message.startswith(f"{path}:{line}:")
    assert f"duplicate key {key!r} (first at line {first})" in message


def test_strict_then_head_no_longer_verifies_in_head_mode(tmp_path: Path) -> None:
    path = tmp_path / "trust.yaml"
    path.write_text("mode: strict\nmode: head\n")

    assert config_error(lambda: load_trust_policy(path)) == (
        f"{path}:2:1: duplicate key 'mode' (first at line 1)"
    )


# -- numbers and aliases -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "load", "text", "line"),
    [
        ("trust.yaml", load_trust_policy, f"mode: head\nallowHistoryRewrite: {BIG}\n", 2),
        ("rollout.yaml", load_rollout_policy, f"waves:\n  - percent: {BIG}\n", 2),
        ("rollout.yaml", load_rollout_policy, f"waves:\n  - percent: 100\n    maxConcurrent: -{BIG}\n", 3),
        ("guards.yaml", load_guard_policy, f"limits:\n  - name: l\n    maxObjectsChanged: {BIG}\n", 3),
        (
            "agent.yaml",
            load_agent_config,
            f"source:\n  url: https://a.example.org/f.git\n  timeoutSeconds: {BIG}\ntrustPolicy: t.yaml\n",
            3,
        ),
    ],
)
def test_a_5000_digit_integer_is_a_clear_error_at_its_line(
    tmp_path: Path, name: str, load: Callable[[Path], object], text: str, line: int
) -> None:
    path = tmp_path / name
    path.write_text(text)

    message = config_error(lambda: load(path))

    assert message.startswith(f"{path}:{line}:")
    assert "characters) is outside the 64-bit range" in message
    assert len(message) < 300


@pytest.mark.parametrize("name", ["trust.yaml", "rollout.yaml", "agent.yaml", "guards.yaml"])
def test_an_alias_bomb_is_refused_without_being_expanded(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(BOMB)
    load = {
        "trust.yaml": load_trust_policy,
        "rollout.yaml": load_rollout_policy,
        "agent.yaml": load_agent_config,
        "guards.yaml": load_guard_policy,
    }[name]

    message = config_error(lambda: load(path))

    assert message.startswith(f"{path}:")
    assert "through aliases" in message


def test_a_second_document_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trust.yaml"
    path.write_text("mode: strict\n---\nmode: head\n")

    assert "more than 1 documents in one file" in config_error(lambda: load_trust_policy(path))


# -- what a file is, before it is read ----------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "pipe")
    return tmp_path / "pipe"


def test_a_fifo_as_a_policy_is_refused_without_waiting(fifo: Path) -> None:
    assert config_error(lambda: load_trust_policy(fifo)) == f"{fifo}: not a regular file (a FIFO)"
    assert config_error(lambda: load_rollout_policy(fifo)) == f"{fifo}: not a regular file (a FIFO)"


@pytest.mark.parametrize(
    ("key_file", "what"), [("pipe", "a FIFO"), ("/dev/null", "a character device"), ("keys", "a directory")]
)
def test_an_openpgp_key_file_that_is_not_a_regular_file_is_refused_naming_it(
    tmp_path: Path, fifo: Path, key_file: str, what: str
) -> None:
    (tmp_path / "keys").mkdir()
    policy = tmp_path / "trust.yaml"
    policy.write_text(f"openpgpKeys:\n  - {key_file}\n")
    shown = key_file if key_file.startswith("/") else str(tmp_path / key_file)

    message = config_error(lambda: load_trust_policy(policy))

    assert message == f"{policy}:2:5: openpgpKeys[0].file: {shown}: not a regular file ({what})"


def test_an_oversize_openpgp_key_file_is_refused_by_its_size(tmp_path: Path) -> None:
    (tmp_path / "big.asc").write_text(ARMORED + "x" * MAX_CONFIG_FILE_BYTES)
    policy = tmp_path / "trust.yaml"
    policy.write_text("openpgpKeys: [big.asc]\n")

    message = config_error(lambda: load_trust_policy(policy))

    size = (tmp_path / "big.asc").stat().st_size
    assert message.endswith(f"big.asc: {size} bytes, limit {MAX_CONFIG_FILE_BYTES}")


def test_an_oversize_policy_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "rollout.yaml"
    path.write_text("waves: [{percent: 100}]\n" + "#" * MAX_CONFIG_FILE_BYTES)

    assert config_error(lambda: load_rollout_policy(path)).startswith(f"{path}: ")
    assert f"limit {MAX_CONFIG_FILE_BYTES}" in config_error(lambda: load_rollout_policy(path))


def test_a_directory_as_the_agent_config_is_refused(tmp_path: Path) -> None:
    assert (
        config_error(lambda: load_agent_config(tmp_path)) == f"{tmp_path}: not a regular file (a directory)"
    )


@pytest.mark.parametrize(
    ("section", "key"),
    [("credentials", "tokenFile"), ("credentials", "sshKeyFile"), ("credentials", "knownHostsFile")],
)
def test_a_credentials_file_that_is_a_fifo_is_refused_at_load(
    tmp_path: Path, fifo: Path, section: str, key: str
) -> None:
    agent = agent_files(
        tmp_path,
        agent=f"source:\n  url: https://git.example.org/f.git\n  {section}:\n    {key}: pipe\n"
        "trustPolicy: trust.yaml\n",
    )

    message = config_error(lambda: load_agent_config(agent))

    assert message == f"{agent}:4:5: source.{section}.{key}: {fifo}: not a regular file (a FIFO)"


def test_a_cluster_kubeconfig_that_is_a_device_is_refused_at_load(tmp_path: Path) -> None:
    agent = agent_files(
        tmp_path,
        agent="source: {url: https://git.example.org/f.git}\ntrustPolicy: trust.yaml\n"
        "clusters:\n  eu-1: {kubeconfig: /dev/null}\n",
    )

    message = config_error(lambda: load_agent_config(agent))

    assert (
        message
        == f"{agent}:4:10: clusters.eu-1.kubeconfig: /dev/null: not a regular file (a character device)"
    )


@pytest.mark.parametrize("secret", ["pipe", "/dev/null"])
def test_a_webhook_secret_file_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, fifo: Path, secret: str
) -> None:
    path = tmp_path / secret

    assert "not a regular file" in config_error(lambda: read_secret(path))


@pytest.mark.parametrize(
    ("name", "load", "text", "said"),
    [
        (
            "agent.yaml",
            load_agent_config,
            "source:\n  url: https://a.example.org/f.git\n  timeoutSeconds: -1\ntrustPolicy: t.yaml\n",
            ":3:3: source.timeoutSeconds: must be a positive number, not -1",
        ),
        (
            "rollout.yaml",
            load_rollout_policy,
            "waves: [{percent: 100}]\nwindows:\n  - schedule: '0 1 * * *'\n    kind: sometimes\n",
            ":4:5: windows[0].kind: must be allow or deny, not 'sometimes'",
        ),
        (
            "trust.yaml",
            load_trust_policy,
            "mode: head\nsigners:\n  - {name: a}\n",
            ":3:5: signers[0]: give exactly one",
        ),
        ("trust.yaml", load_trust_policy, "mode: head\nextra: 1\n", ":2:1: top level: unknown key(s) extra"),
    ],
)
def test_a_shape_error_names_the_line_of_its_key(
    tmp_path: Path, name: str, load: Callable[[Path], object], text: str, said: str
) -> None:
    path = tmp_path / name
    path.write_text(text)

    assert config_error(lambda: load(path)).startswith(f"{path}{said}")


def test_a_cluster_kubeconfig_may_be_larger_than_a_policy_but_not_without_bound(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "fleet.kubeconfig"
    agent = agent_files(
        tmp_path,
        agent=f"source: {{url: https://git.example.org/f.git}}\ntrustPolicy: trust.yaml\n"
        f"clusters:\n  eu-1: {{kubeconfig: {kubeconfig}}}\n",
    )
    with kubeconfig.open("wb") as sparse:
        sparse.truncate(MAX_CONFIG_FILE_BYTES * 2)

    assert load_agent_config(agent).clusters["eu-1"].kubeconfig == kubeconfig

    with kubeconfig.open("wb") as sparse:
        sparse.truncate(MAX_KUBECONFIG_BYTES + 1)
    message = config_error(lambda: load_agent_config(agent))
    assert message.endswith(f"{kubeconfig}: {MAX_KUBECONFIG_BYTES + 1} bytes, limit {MAX_KUBECONFIG_BYTES}")
