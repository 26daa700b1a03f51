"""Hostile inputs through the real entry points (``syncer render``, ``diff``, ``verify`` and ``run`` as
whole processes): a 5000-digit integer, a duplicate key, a FIFO or an endless device where a file
should be. Each ends in a clear error naming the file and exit code 2 within seconds, in a process
whose memory is capped; never a traceback, a hang or a process the kernel kills."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "repo"
MEMORY = 2 << 30
"""Bytes of address space each process may map: plenty for syncer, little for reading /dev/zero."""


def syncer(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """One ``syncer`` process with its memory capped and 60 s to end (a FIFO must not hang the test)."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    return subprocess.run(
        [sys.executable, "-m", "syncer", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        preexec_fn=cap,
        cwd=cwd,
    )


def assert_clear_error(done: subprocess.CompletedProcess[str], *said: str) -> None:
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode == 2, output
    flat = " ".join(output.split())
    for part in said:
        assert part in flat, output


@pytest.fixture
def huge_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    sessions = repo / "base" / "sessions.yaml"
    sessions.write_text(sessions.read_text().replace("shards: 3", "shards: " + "9" * 5000, 1))
    return repo


def test_render_of_a_5000_digit_integer_names_its_file_and_line(huge_repo: Path) -> None:
    done = syncer("render", "--repo", str(huge_repo))

    assert_clear_error(
        done, "base/sessions.yaml:9:11: yaml-value: integer 99999999999999999999... (5000 characters)"
    )


def test_offline_diff_of_a_5000_digit_integer_names_its_file_and_line(huge_repo: Path) -> None:
    done = syncer("diff", "--repo", str(huge_repo), "--offline")

    assert_clear_error(done, "base/sessions.yaml:9:11: yaml-value: integer")


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "fleet"
    shutil.copytree(EXAMPLE, repo)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for command in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=ops", "-c", "user.email=ops@example.org", "commit", "-q", "-m", "fleet"],
    ):
        subprocess.run(["git", *command], cwd=repo, check=True, env=env, capture_output=True)
    return repo


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        ("mode: strict\nmode: head\n", "trust.yaml:2:1: duplicate key 'mode' (first at line 1)"),
        (
            "mode: head\nallowHistoryRewrite: " + "1" * 5000 + "\n",
            "trust.yaml:2:22: integer 11111111111111111111...",
        ),
        ("openpgpKeys: [pipe]\n", "openpgpKeys[0].file: {dir}/pipe: not a regular file (a FIFO)"),
        (
            "openpgpKeys: [/dev/zero]\n",
            "openpgpKeys[0].file: /dev/zero: not a regular file (a character device)",
        ),
    ],
    ids=["duplicate-key", "huge-integer", "fifo-key", "dev-zero-key"],
)
def test_verify_refuses_a_hostile_trust_policy_clearly(
    git_repo: Path, tmp_path: Path, policy: str, said: str
) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "trust.yaml").write_text(policy)

    done = syncer("verify", "--repo", str(git_repo), "--policy", str(tmp_path / "trust.yaml"))

    assert_clear_error(done, said.format(dir=tmp_path))


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"trust.yaml": "mode: strict\nsigners: []\nmode: head\n"}, "trust.yaml:3:1: duplicate key 'mode'"),
        (
            {"trust.yaml": "openpgpKeys: [pipe]\n"},
            "openpgpKeys[0].file: {dir}/pipe: not a regular file (a FIFO)",
        ),
        ({"trust.yaml": "openpgpKeys: [/dev/zero]\n"}, "/dev/zero: not a regular file (a character device)"),
        (
            {"trust.yaml": "mode: head\n", "rollout.yaml": "waves:\n  - percent: " + "1" * 5000 + "\n"},
            "rollout.yaml:2:14: integer 11111111111111111111... (5000 characters) is outside the 64-bit",
        ),
        (
            {"trust.yaml": "mode: head\n", "rollout.yaml": "waves:\n  - percent: 100\n    percent: 10\n"},
            "rollout.yaml:3:5: duplicate key 'percent' (first at line 2)",
        ),
    ],
    ids=["duplicate-key", "fifo-key", "dev-zero-key", "huge-integer-rollout", "duplicate-key-rollout"],
)
def test_run_refuses_hostile_agent_files_before_it_starts(
    tmp_path: Path, files: dict[str, str], said: str
) -> None:
    os.mkfifo(tmp_path / "pipe")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    source = f"{{url: {tmp_path / 'fleet.git'}, cacheDir: {tmp_path / 'cache'}}}"
    (tmp_path / "agent.yaml").write_text(f"source: {source}\ntrustPolicy: trust.yaml\n")
    rollout = ["--rollout-policy", str(tmp_path / "rollout.yaml")] if "rollout.yaml" in files else []

    done = syncer("run", "--config", str(tmp_path / "agent.yaml"), "--http-port", "0", *rollout)

    assert_clear_error(done, said.format(dir=tmp_path))


@pytest.mark.parametrize("command", ["run", "sync", "diff"])
def test_a_kubeconfig_that_is_a_fifo_is_refused_before_any_cluster_is_asked(
    tmp_path: Path, command: str
) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "trust.yaml").write_text("mode: head\n")
    source = f"{{url: {tmp_path / 'fleet.git'}, cacheDir: {tmp_path / 'cache'}}}"
    (tmp_path / "agent.yaml").write_text(f"source: {source}\ntrustPolicy: trust.yaml\n")
    agent = ["--config", str(tmp_path / "agent.yaml"), "--kubeconfig", str(tmp_path / "pipe")]
    arguments = {
        "run": ["run", *agent, "--http-port", "0", "--no-leader-elect"],
        "sync": ["sync", "--once", *agent],
        "diff": ["diff", "--repo", str(EXAMPLE), "--kubeconfig", str(tmp_path / "pipe")],
    }[command]

    done = syncer(*arguments)

    assert_clear_error(done, f"{tmp_path / 'pipe'}: not a regular file (a FIFO)")
