"""The fleet page's first render and update latency in Debian's headless chromium, served by a real
``syncer run`` rolling signed revisions out to light fleets of 10 and 100 clusters.

Run: ``python bench/bench_ui.py [--sizes 10,100] [--objects 10] [--revisions 2] [--loads 5]``.

For each size a light fleet is started (``syncer-fleet up --profile light``: one kube-apiserver per
cluster on a shared etcd; RedisClusters are marked Ready by the devfleet **status stand-in**, as in
``bench_fleet.py``), and one ``syncer run`` (leader election, poll every 2 s) rolls a signed
revision of ``--objects`` RedisClusters per cluster out in three waves (1 %, 10 %, 100 %; bake 0).
The page is what that agent serves at ``/ui`` on its own listener: its picture folded from the
pass's events and the clusters' recorded states, each cluster with its detail (objects, last
change, history).

Measured per size:

* **first render**: once the first revision is in force everywhere, from the start of navigation to
  ``/ui`` to the page having rendered the fleet (``performance.now()`` when ``body[data-version]`` is
  first set), median of ``--loads`` loads; and the size of ``/ui/state`` (the picture as JSON);
* **update latency**: while ``--revisions`` more revisions roll out (each a new Redis version: an
  update of every object), from the agent's log line of a step that changes a wave's state (the
  agent logs each event before the page is told it; the log's clock, in milliseconds) to the
  browser's DOM showing that state (``Date.now()`` in a MutationObserver), median and worst over
  every wave transition seen.

Goals (exit 1 when one is missed): first render <= 300 ms with 100 clusters; every update shown
within 1 s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_fleet import Replica, Repo, fleet_files, log, wait_for  # noqa: E402
from devfleet import fleet as devfleet  # noqa: E402
from devfleet.access import install_redis_crd  # noqa: E402
from devfleet.standin import ReadyStatusStandIn  # noqa: E402
from syncer.domain.progress import PassEvent, Step  # noqa: E402
from syncer.domain.rollout_status import WavePhase, advance, initial  # noqa: E402
from syncer.kube import ClusterClient  # noqa: E402

FIRST_RENDER_GOAL = 0.300
UPDATE_GOAL = 1.0
WAVES = {
    "waves": [
        {"name": "canary", "percent": 1},
        {"name": "early", "percent": 10},
        {"name": "rest", "percent": 100},
    ],
    "defaults": {"maxConcurrent": 8, "healthTimeout": "900s", "bake": "0s"},
    "rollback": False,
}
VERSIONS = ("7.2.5", "7.4.1", "7.4.2", "7.4.3", "7.4.4")
ROLLOUT_TIMEOUT = 1800

FIRST_RENDER = """
const done = arguments[arguments.length - 1];
const look = () => document.body.dataset.version ? done(performance.now()) : setTimeout(look, 5);
look();
"""
# Every change of a wave's rendered state, with the browser's wall clock.
WATCH = """
window.__shown = [];
const last = {};
new MutationObserver(() => {
  for (const wave of document.querySelectorAll('.wave')) {
    const name = wave.dataset.wave, state = wave.dataset.state;
    if (last[name] !== state) { last[name] = state; window.__shown.push([name, state, Date.now()]); }
  }
}).observe(document.getElementById('waves'), {childList: true, subtree: true, attributes: true});
"""


def states_of(step: Step) -> frozenset[str]:
    """The wave states a logged step may put its wave in, as the rollout's status takes it (a
    gate's wait is for health, a bake or the analysis: the log does not say which)."""
    if step is Step.GATE_WAIT:
        return frozenset(p.value for p in (WavePhase.WAITING_HEALTH, WavePhase.BAKING, WavePhase.ANALYSING))
    after = advance(initial(["w"]), PassEvent(step, "w")).wave("w").phase
    return frozenset() if after is WavePhase.PENDING else frozenset({after.value})


@dataclass(frozen=True)
class Told:
    """A step the agent logged that changes a wave's state: the wave, the states it may set, when."""

    wave: str
    states: frozenset[str]
    at: float


def told_since(stderr: Path, offset: int) -> list[Told]:
    """The wave-changing steps the agent logged (JSON lines) after ``offset`` bytes of its stderr."""
    found = []
    with stderr.open("rb") as stream:
        stream.seek(offset)
        for line in stream.read().decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                entry = json.loads(line)
                step, wave = Step(entry["message"]), entry.get("wave", "")
                if wave and states_of(step):
                    found.append(
                        Told(wave, states_of(step), datetime.fromisoformat(entry["time"]).timestamp())
                    )
    return found


def latencies(shown: Sequence[Sequence[Any]], told: Sequence[Told], since: float) -> list[float]:
    """For each wave state the page showed after ``since``: the time from the first logged step that
    set it (after the one that set the wave's state before) to the DOM showing it."""
    out: list[float] = []
    last: dict[str, float] = {}
    for wave, state, at_ms in shown:
        at = at_ms / 1000
        if at < since:
            continue
        cause = next(
            (t.at for t in told if t.wave == wave and state in t.states and t.at >= last.get(wave, since)),
            None,
        )
        if cause is None:
            continue  # a wave reset to pending by a new revision: no step of its own
        last[wave] = cause + 0.0005
        out.append(max(at - cause, 0.0))
    return out


class AgentProcess(Replica):
    """One ``syncer run`` of the bench's fleet (not sharded); its stderr (JSON log lines) kept in a
    file."""

    def __init__(self, args: list[str], workdir: Path) -> None:
        super().__init__("agent", args, workdir, sharded=False)

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ui/state", timeout=30) as resp:
            picture: dict[str, Any] = json.loads(resp.read())
            return picture

    def in_force(self, revision: str) -> bool:
        picture = self.state()
        return (picture.get("inForce") or {}).get("sha") == revision and picture.get("rolling") is None


def browser() -> webdriver.Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        sys.exit("bench_ui: Debian's chromium and chromium-driver are needed: run scripts/bootstrap")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(driver))


def push(repo: Repo, clusters: Sequence[str], objects: int, version: str) -> str:
    files = fleet_files(clusters, "ui-bench", objects)
    files["base/objects.yaml"] = files["base/objects.yaml"].replace("version: 7.2.5", f"version: {version}")
    repo.push(files, f"caches on Redis {version}")
    return repo_head(repo)


def repo_head(repo: Repo) -> str:
    out = subprocess.run(
        ["git", "-C", str(repo.work), "rev-parse", "HEAD"],
        env=repo.env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@dataclass(frozen=True)
class Figures:
    clusters: int
    render: float
    state_kib: float
    update_median: float
    update_worst: float
    samples: int


def measure(
    chrome: webdriver.Chrome, agent: AgentProcess, repo: Repo, names: Sequence[str], args: Any
) -> Figures:
    url = f"http://127.0.0.1:{agent.port}/ui"
    revision = push(repo, names, args.objects, VERSIONS[0])
    wait_for(
        "the first revision in force on every cluster", lambda: agent.in_force(revision), ROLLOUT_TIMEOUT, 1
    )
    with urllib.request.urlopen(f"{url}/state", timeout=30) as resp:
        state_kib = len(resp.read()) / 1024
    renders = []
    for _ in range(args.loads):
        chrome.get(url)
        renders.append(chrome.execute_async_script(FIRST_RENDER) / 1000)
    chrome.execute_script(WATCH)
    samples: list[float] = []
    for version in VERSIONS[1 : 1 + args.revisions]:
        offset, since = agent.stderr.stat().st_size, time.time()
        newer = push(repo, names, args.objects, version)
        wait_for(f"Redis {version} in force", functools.partial(agent.in_force, newer), ROLLOUT_TIMEOUT, 1)
        time.sleep(1)  # the last render after the pass's end is in the browser's record
        shown = chrome.execute_script("const s = window.__shown; window.__shown = []; return s;")
        samples += latencies(shown, told_since(agent.stderr, offset), since)
    if not samples:
        raise RuntimeError("no wave transition was seen in the browser")
    return Figures(
        len(names),
        statistics.median(renders),
        state_kib,
        statistics.median(samples),
        max(samples),
        len(samples),
    )


def run_size(root: Path, chrome: webdriver.Chrome, size: int, args: Any) -> Figures:
    names = devfleet.cluster_names(size, "ui")
    state = root / f"fleet-{size}"
    log(f"starting {size} light clusters ...")
    began = time.monotonic()
    options = devfleet.UpOptions(clusters=names, profile=devfleet.Profile.LIGHT, timeout=300.0 + 30.0 * size)
    fleet = devfleet.up(state, options, log)
    log(f"{size} light clusters up in {time.monotonic() - began:.0f} s")
    agent = None
    try:
        apis = [ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in names]
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda a: install_redis_crd(a, field_manager="bench"), apis))
        for api in apis:
            api.close()
        work = root / f"agent-{size}"
        work.mkdir()
        repo = Repo(work / "repo")
        (work / "waves.yaml").write_text(yaml.safe_dump(WAVES))
        config = {
            "source": {"url": str(repo.remote), "cacheDir": str(work / "cache"), "timeoutSeconds": 120},
            "trustPolicy": str(repo.root / "trust.yaml"),
            "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in names},
        }
        (work / "agent.yaml").write_text(yaml.safe_dump(config))
        argv = [
            "--config", str(work / "agent.yaml"), "--rollout-policy", str(work / "waves.yaml"),
            "--kubeconfig", str(fleet.kubeconfig), "--state-namespace", "ui-bench-state",
            "--lease-context", names[0], "--lease-namespace", "ui-bench-lease",
            "--interval", "2s", "--jitter", "0s", "--drift-interval", "1h",
            "--http-port", "0", "--probe-port", "0",
        ]  # fmt: skip
        agent = AgentProcess(argv, work)
        agent.announced_port(timeout=180)
        with ReadyStatusStandIn(fleet.kubeconfig, names):
            return measure(chrome, agent, repo, names, args)
    finally:
        if agent is not None:
            agent.stop()
        devfleet.down(state, log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--objects", type=int, default=10)
    parser.add_argument("--revisions", type=int, default=2, choices=range(1, len(VERSIONS)))
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chrome = browser()
    missed, figures = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ui-") as tmp:
            for size in (int(s) for s in args.sizes.split(",")):
                figures.append(run_size(Path(tmp), chrome, size, args))
                log(f"  {figures[-1]}")
    finally:
        chrome.quit()
    head = ("clusters", "first render", "/ui/state", "update median", "update worst", "n")
    print("{:>8} {:>13} {:>10} {:>14} {:>13} {:>4}".format(*head))
    for f in figures:
        print(
            f"{f.clusters:>8} {f.render * 1000:>10.0f} ms {f.state_kib:>6.0f} KiB "
            f"{f.update_median * 1000:>11.0f} ms {f.update_worst * 1000:>10.0f} ms {f.samples:>4}"
        )
        if f.clusters >= 100 and f.render > FIRST_RENDER_GOAL:
            missed.append(f"first render with {f.clusters} clusters {f.render * 1000:.0f} ms > 300 ms")
        if f.update_worst > UPDATE_GOAL:
            missed.append(f"an update with {f.clusters} clusters took {f.update_worst * 1000:.0f} ms > 1 s")
    for problem in missed:
        print(f"goal missed: {problem}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
