"""Waiting for the fleet's processes: HTTP probes, deadlines, and the tail of a log when one fails."""

from __future__ import annotations

import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from devfleet import procs


def free_port(taken: set[int] | None = None) -> int:
    """A TCP port of 127.0.0.1 nothing listens on now, not among ``taken`` (which it joins)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        if taken is None:
            return port
        if port not in taken:
            taken.add(port)
            return port


def client_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


def get(url: str, ctx: ssl.SSLContext | None, timeout: float = 2.0) -> tuple[int, str]:
    """The status and body of a GET; status 0 when nothing answered."""
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode()
    except urllib.error.HTTPError as err:
        with err:  # an answer that is not 2xx still holds its connection until closed
            return err.code, err.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as err:
        return 0, str(err)


def answers_ok(url: str, ctx: ssl.SSLContext | None) -> bool:
    return get(url, ctx)[0] == 200


class Exited(RuntimeError):
    """The process waited for exited; ``log`` is the tail of its log."""

    def __init__(self, what: str, proc: procs.Proc, log: str) -> None:
        super().__init__(f"{what}: {proc.name} exited; last log lines:\n{log}")
        self.proc = proc
        self.log = log


def wait(what: str, check: Callable[[], bool], deadline: float, proc: procs.Proc | None) -> None:
    """Until ``check()`` holds; Exited when ``proc`` dies first, TimeoutError at ``deadline``."""
    while time.monotonic() < deadline:
        if check():
            return
        if proc is not None and not proc.alive():
            raise Exited(what, proc, tail(Path(proc.log)))
        time.sleep(0.2)
    log = f"; last log lines:\n{tail(Path(proc.log))}" if proc else ""
    raise TimeoutError(f"timed out waiting for {what}{log}")


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log)"


def port_taken(log: str) -> bool:
    """Whether a process's log says its port was taken between choosing it and binding it."""
    return "address already in use" in log
