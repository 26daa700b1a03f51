"""Following a revision from ``syncer sync --once`` to the apply call that writes it: the agent module
is entered once (``Agent.sync_once``) and never called again until the object is applied; the pass
itself runs in the engine. Traced with a profiler over every thread, on the real fleet and a real
signed git remote."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from syncer.cli import cli
from syncer.kube import ClusterClient
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.namespaces import delete_namespaces

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Call:
    """One call of a syncer function: its module and name, the caller's module, the thread, and
    the modules of the whole stack of that thread at that moment (innermost first)."""

    module: str
    name: str
    caller: str
    thread: int
    stack: tuple[str, ...]
    applies: str = ""


def _modules(frame: FrameType | None) -> tuple[str, ...]:
    found = []
    while frame is not None:
        found.append(str(frame.f_globals.get("__name__", "")))
        frame = frame.f_back
    return tuple(found)


class Tracer:
    """Records every call into a ``syncer`` module, in every thread, and which calls apply objects."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    def _applied(self, frame: FrameType) -> str:
        if frame.f_code.co_qualname != "ClusterClient.apply":
            return ""
        body: Any = frame.f_locals.get("body") or {}
        options: Any = frame.f_locals.get("options")
        if options is None or options.dry_run or body.get("kind") != "Namespace":
            return ""
        name = str((body.get("metadata") or {}).get("name", ""))
        return name if name == self.namespace else ""

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith("syncer."):
            return
        caller = str(frame.f_back.f_globals.get("__name__", "")) if frame.f_back else ""
        call = Call(
            module,
            frame.f_code.co_qualname,
            caller,
            threading.get_ident(),
            _modules(frame),
            self._applied(frame),
        )
        with self._lock:
            self.calls.append(call)

    @contextlib.contextmanager
    def tracing(self) -> Iterator[None]:
        threading.setprofile(self)
        sys.setprofile(self)
        try:
            yield
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]


@pytest.fixture
def repo(tmp_path: Path, fleet: FleetHandle, ops_key: SshKey, namespace: str) -> Iterator[Path]:
    """A signed remote whose tip holds one Namespace for every cluster, and the agent's files."""
    prefix = f"{namespace}-path"
    remote = bare_remote(tmp_path / "remote.git")
    work = GitRepo(tmp_path / "work")
    fleet_file = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "clusters": [{"name": n} for n in fleet.names],
    }
    work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
    namespace_doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix}}
    work.commit("one namespace", {"base/ns.yaml": yaml.safe_dump(namespace_doc)}, sign=ops_key)
    work.git("push", "-q", str(remote), "main")
    write_policy(tmp_path / "trust.yaml", signers=[{"name": "ops", "ssh": ops_key.public_line}], keys=[])
    rollout = {"waves": [{"name": "all", "percent": 100}], "defaults": {"bake": "0s", "healthTimeout": "30s"}}
    (tmp_path / "rollout.yaml").write_text(yaml.safe_dump(rollout))
    config = {
        "source": {"url": str(remote), "cacheDir": str(tmp_path / "cache"), "timeoutSeconds": 30},
        "trustPolicy": "trust.yaml",
        "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in fleet.names},
    }
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    yield tmp_path
    for name in fleet.names:
        client = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
        try:
            delete_namespaces([client], prefix, f"{prefix}-state", f"{prefix}-lease")
        finally:
            client.close()


def test_sync_once_enters_the_agent_once_and_the_engine_carries_the_revision_to_the_apply(
    repo: Path, namespace: str, fleet: FleetHandle
) -> None:
    tracer = Tracer(f"{namespace}-path")
    args = [
        "sync",
        "--once",
        "--config",
        str(repo / "agent.yaml"),
        "--rollout-policy",
        str(repo / "rollout.yaml"),
        "--state-namespace",
        f"{namespace}-path-state",
        # The pass holds the fleet's Lease, in the canary cluster here.
        "--kubeconfig",
        str(fleet.kubeconfig),
        "--lease-context",
        "canary",
        "--lease-namespace",
        f"{namespace}-path-lease",
    ]
    with tracer.tracing():
        result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    calls = tracer.calls

    def is_agent(module: str) -> bool:
        return module.startswith("syncer.agent")

    # The revision first exists when the engine's gate polls git; from there to the last apply of
    # the revision's object, nothing of the agent module is called, in any thread, but the listeners
    # the pass tells its typed events to (the agent's tally of what the pass did, and the fleet page
    # that folds the same events into its picture).
    first_poll = next(i for i, c in enumerate(calls) if c.name == "RevisionGate.advance")
    applied_at = [i for i, c in enumerate(calls) if c.applies]
    assert len(applied_at) == 3, "one apply per cluster"
    assert first_poll < applied_at[0]
    # The listeners, and their own calls (the tally's, the page's).
    told = {"syncer.domain.progress", "syncer.agent.service", "syncer.agent.fleet_page"}
    on_the_way = [
        c for c in calls[first_poll : applied_at[-1]] if is_agent(c.module) and c.caller not in told
    ]
    assert on_the_way == [], [f"{c.module}.{c.name}" for c in on_the_way]

    # When the gate is asked for the revision, the agent is on the stack once: one call, sync_once,
    # made by the one pass that holds the fleet's Lease (syncer.agent.once, entered by the CLI);
    # everything below it up to the gate is the engine.
    poll = calls[first_poll]
    agent_frames = [m for m in poll.stack if is_agent(m)]
    assert agent_frames[:1] == ["syncer.agent.service"], agent_frames
    assert set(agent_frames) <= {"syncer.agent.service", "syncer.agent.once"}, agent_frames
    entry = next(c for c in reversed(calls[:first_poll]) if c.name == "Agent.sync_once")
    assert entry.caller == "syncer.agent.once"
    assert any(c.name == "one_pass" and c.caller == "syncer.cli.agent_cmds" for c in calls[:first_poll])
    between = poll.stack[: poll.stack.index("syncer.agent.service")]
    assert set(between) <= {"syncer.engine.revision", "syncer.engine.fleet_pass"}, between

    # Each apply is made by the apply stage, in a worker thread of the rollout, with no agent frame;
    # the Lease fence in front of the client checks the write and passes it on.
    for index in applied_at:
        call = calls[index]
        assert call.caller == "syncer.leader.fence"
        callers = [m for m in call.stack[1:] if m != "syncer.leader.fence"]
        assert callers[0] == "syncer.apply.executor", call.stack
        assert call.thread != poll.thread
        assert not [m for m in call.stack if is_agent(m)], call.stack
