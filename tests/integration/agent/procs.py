"""``syncer run`` as real processes for the integration tests: started in their own session with
stdout and stderr in files, read through their JSON logs and their HTTP endpoints, and always
killed (whole process group) at the end of the test."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client.parser import text_string_to_metric_families

from tests.support.waiting import eventually

T = TypeVar("T")

SERVING = "serving /metrics, /healthz, /readyz and /hooks/git on port "
PROBES = "serving the probes /healthz and /readyz on port "


class AgentProc:
    """One ``python -m syncer run ...`` process (started through ``prefix``, e.g. ``setpriv ...``)."""

    def __init__(self, name: str, args: list[str], workdir: Path, prefix: Sequence[str] = ()) -> None:
        self.name = name
        self.args = args
        self.stdout_path = workdir / f"{name}.stdout"
        self.stderr_path = workdir / f"{name}.stderr"
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.popen = subprocess.Popen(
                [*prefix, sys.executable, "-m", "syncer", "run", *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=workdir,
                start_new_session=True,
            )
        self._port = 0
        self._probe_port = 0

    @property
    def pid(self) -> int:
        return self.popen.pid

    # -- what it says -----------------------------------------------------------------------------

    def logs(self) -> list[dict[str, Any]]:
        """Its JSON log lines so far (lines that are not JSON, e.g. from other libraries, skipped)."""
        records = []
        for line in self.stderr_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if isinstance(record, dict):
                    records.append(record)
        return records

    def steps(self, step: str) -> list[dict[str, Any]]:
        """Its log records of one rollout step (``applying``, ``already-applied``, ...)."""
        return [r for r in self.logs() if r.get("logger") == "syncer.agent" and r.get("message") == step]

    def said(self, prefix: str) -> list[str]:
        return [str(r["message"]) for r in self.logs() if str(r.get("message", "")).startswith(prefix)]

    def port(self, timeout: float = 30) -> int:
        """The HTTP port it announced (it was started with ``--http-port 0``)."""
        if not self._port:
            announced = eventually(
                f"{self.name} to announce its HTTP port",
                lambda: self.running() and self.said(SERVING),
                timeout,
            )
            self._port = int(announced[0].removeprefix(SERVING))
        return self._port

    def probe_port(self, timeout: float = 30) -> int:
        """The probe listener's port it announced (it was started with ``--probe-port 0``)."""
        if not self._probe_port:

            def said() -> list[str]:
                return self.running() and self.said(PROBES)

            announced = eventually(f"{self.name} to announce its probe port", said, timeout)
            self._probe_port = int(announced[0].removeprefix(PROBES))
        return self._probe_port

    def running(self) -> bool:
        """True while it runs; an AssertionError (with its logs) once it has exited."""
        code = self.popen.poll()
        if code is not None:
            raise AssertionError(f"{self.name} exited with {code}\n{self.describe()}")
        return True

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port(), timeout=5)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode()
        finally:
            conn.close()

    def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics``, keyed ``name{label="value",...}`` (labels sorted)."""
        status, text = self.get("/metrics")
        assert status == 200, text
        samples: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                samples[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
        return samples

    def describe(self, lines: int = 60) -> str:
        parts = [
            f"--- {self.name} (pid {self.pid}, exit {self.popen.poll()}): syncer run {' '.join(self.args)}"
        ]
        for path in (self.stdout_path, self.stderr_path):
            text = path.read_text(errors="replace").splitlines() if path.exists() else []
            parts.append(f"--- {path.name} (last {lines} of {len(text)} lines)")
            parts += text[-lines:]
        return "\n".join(parts)

    # -- stopping it ------------------------------------------------------------------------------

    def send(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the agent process itself (as a kubelet does to a container's PID 1)."""
        self.popen.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL its whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.popen.wait(timeout=30)

    def gone(self) -> bool:
        """True when neither it nor anything it started in its session is left."""
        if self.popen.poll() is None:
            return False
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return True
        return False


class Agents:
    """The agent processes of one test; ``shown_on_failure`` prints their logs when the test fails."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[AgentProc] = []

    def start(self, name: str, args: list[str], prefix: Sequence[str] = ()) -> AgentProc:
        proc = AgentProc(name, args, self.workdir, prefix)
        self.procs.append(proc)
        return proc

    @contextlib.contextmanager
    def shown_on_failure(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            for proc in self.procs:
                print(proc.describe(), flush=True)
            raise

    def close(self) -> None:
        """Kill whatever is still running; fail if any agent process (or child) survives."""
        for proc in self.procs:
            proc.kill()
        # Children killed with the group (git, ssh-keygen) may take a moment to be reaped.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not all(p.gone() for p in self.procs):
            time.sleep(0.1)
        left = [p.name for p in self.procs if not p.gone()]
        assert not left, f"agent processes left running: {left}"
