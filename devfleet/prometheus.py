"""A real Prometheus beside the local fleet: Debian's ``prometheus`` (2.42) on a free port of
127.0.0.1, serving HTTPS with a certificate of its own CA, scraping the targets it is given, stopped
with the fleet.

Targets are file-discovered (``file_sd_configs``): each job is one JSON file of ``targets/`` that
Prometheus watches, so a test adds or changes what is scraped without restarting it. The process is
recorded among the fleet's processes, so ``down`` stops it like any other component.
"""

from __future__ import annotations

import json
import shutil
import ssl
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from devfleet import pki, probe, procs, services
from devfleet.fleet import locked
from devfleet.state import Fleet, Say

NAME = "prometheus"
# How often every target is scraped and rules evaluated: short, so that a test sees a change quickly.
SCRAPE_INTERVAL = "1s"
# How many times Prometheus is started again on a new port when another process took its port first.
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class TargetGroup:
    """Addresses (``host:port``) scraped with the same labels (e.g. ``cluster``, ``pod``)."""

    addresses: tuple[str, ...]
    labels: dict[str, str]


def targets_dir(root: Path) -> Path:
    """The folder of file-discovered targets of the fleet in ``root`` (made by whoever writes first:
    targets written before Prometheus starts are scraped once it runs)."""
    return root / NAME / "targets"


def write_targets(folder: Path, job: str, groups: list[TargetGroup]) -> None:
    """Scrape ``groups`` as ``job`` from now on (none: stop scraping it)."""
    folder.mkdir(parents=True, exist_ok=True)
    entry = [{"targets": list(g.addresses), "labels": g.labels} for g in groups]
    partial = folder / f".{job}.json.new"
    partial.write_text(json.dumps(entry))
    partial.replace(folder / f"{job}.json")  # whole files only: Prometheus watches the folder


def remove_targets(folder: Path, job: str) -> None:
    """Stop scraping ``job``."""
    (folder / f"{job}.json").unlink(missing_ok=True)


@dataclass(frozen=True)
class LocalPrometheus:
    """A Prometheus of the fleet: its base URL (https), the CA bundle that verifies it, and the folder
    of its file-discovered targets."""

    url: str
    ca_file: Path
    targets: Path

    def scrape(self, job: str, addresses: list[str], labels: dict[str, str] | None = None) -> None:
        """Scrape ``addresses`` (``host:port``) as ``job`` from now on (none: stop scraping it)."""
        write_targets(self.targets, job, [TargetGroup(tuple(addresses), labels or {})] if addresses else [])

    def query(self, promql: str) -> float | None:
        """The one number ``promql`` gives now (None: no single series, or no answer), for a person
        or a test checking what Prometheus sees."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        context = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            with urllib.request.urlopen(url, timeout=5, context=context) as answer:
                body = json.load(answer)
        except (OSError, ValueError):
            return None
        result = body.get("data", {}).get("result", [])
        if not isinstance(result, list) or len(result) != 1:
            return None
        return float(result[0]["value"][1])


def _binary() -> str:
    found = shutil.which(NAME)
    if found is None:
        raise RuntimeError("prometheus is not installed (Debian package prometheus; scripts/bootstrap)")
    return found


def _config(targets: Path) -> str:
    relabel = {"source_labels": ["__meta_filepath"], "regex": r".*/([^/]+)\.json", "target_label": "job"}
    jobs = {
        "job_name": "fleet",
        "file_sd_configs": [{"files": [str(targets / "*.json")], "refresh_interval": "1s"}],
        "relabel_configs": [relabel],
    }
    settings = {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL}
    return yaml.safe_dump({"global": settings, "scrape_configs": [jobs]})


def _tls(home: Path) -> None:
    """A CA of its own and a serving certificate for 127.0.0.1, and the web config that serves them."""
    ca = pki.CertificateAuthority.create(home / "pki", f"{NAME}-ca")
    pair = ca.issue(home / "pki" / "server", NAME, server_ips=("127.0.0.1",), server_names=("localhost",))
    web = {"tls_server_config": {"cert_file": str(pair.cert), "key_file": str(pair.key)}}
    (home / "web.yml").write_text(yaml.safe_dump(web))


def _argv(home: Path, port: int) -> list[str]:
    return [
        _binary(),
        f"--config.file={home / 'prometheus.yml'}",
        f"--web.config.file={home / 'web.yml'}",
        f"--storage.tsdb.path={home / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=1d",
        "--log.level=warn",
    ]


def _home(fleet: Fleet) -> Path:
    return fleet.root / NAME


def _handle(proc: procs.Proc, fleet: Fleet) -> LocalPrometheus:
    listen = next(a for a in proc.argv if a.startswith("--web.listen-address="))
    home = _home(fleet)
    return LocalPrometheus(
        f"https://{listen.split('=', 1)[1]}", home / "pki" / "ca.crt", targets_dir(fleet.root)
    )


def _wait_ready(proc: procs.Proc, local: LocalPrometheus, timeout: float) -> None:
    ready = f"{local.url}/-/ready"
    context = ssl.create_default_context(cafile=str(local.ca_file))
    probe.wait(f"{NAME} {ready}", lambda: probe.answers_ok(ready, context), time.monotonic() + timeout, proc)


def start(root: Path, say: Say = print, timeout: float = 60.0) -> LocalPrometheus:
    """Start the fleet's Prometheus in ``root`` (or return the running one) once it answers ready;
    a recorded one that was stopped is started again on its port, with its data."""
    with locked(root):
        fleet = Fleet.load(root)
        if fleet is None:
            raise RuntimeError(f"no fleet at {root}")
        old = services.recorded(fleet, NAME)
        if old is not None:
            if not old.alive():
                old = services.started_again(
                    fleet, old, lambda p: _wait_ready(p, _handle(p, fleet), timeout), say
                )
            return _handle(old, fleet)
        home = _home(fleet)
        (home / "targets").mkdir(parents=True, exist_ok=True)
        (home / "prometheus.yml").write_text(_config(home / "targets"))
        _tls(home)

        def spawn(taken: set[int]) -> procs.Proc:
            return procs.spawn(NAME, _argv(home, probe.free_port(taken)), home / "prometheus.log", home)

        def ready(proc: procs.Proc) -> None:
            _wait_ready(proc, _handle(proc, fleet), timeout)

        proc = services.spawned_on_free_ports(fleet, spawn, ready, PORT_ATTEMPTS)
        handle = _handle(proc, fleet)
        say(f"{NAME} up at {handle.url} (pid {proc.pid})")
        return handle


def stop(root: Path, say: Say = print) -> None:
    """Stop the fleet's Prometheus; its record stays, so ``start`` brings it back on the same port."""
    services.stop(root, NAME, say)
