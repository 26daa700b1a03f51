"""The fleet page's first render and update latency in Debian's headless chromium, with 10 and 100
clusters served.

Run: ``python bench/bench_ui.py [--sizes 10,100] [--objects 10] [--updates 20]``.

For each size the agent's own HTTP listener (``AgentServer`` with the page's routes) serves a
``FleetPage`` holding that many clusters in three waves (1 / 10 / the rest), each cluster's picture
folded from a recorded sync state with ``--objects`` applied objects, as a pass that read them would
leave it. No Kubernetes is started: what is measured is the page, the JSON and the event stream, not
how fast clusters answer (``bench_fleet.py`` measures that).

Measured per size:

* **first render**: from the start of navigation to ``/ui`` to the page having rendered the fleet
  (``performance.now()`` when ``body[data-version]`` is first set), median of ``--loads`` loads;
* **update latency**: from a pass event told to the page (the wall clock in this process) to the
  browser's DOM showing the wave state it sets (the wall clock in the browser, recorded by a
  MutationObserver), median and worst of ``--updates`` events.

Goals (exit 1 when one is missed): first render <= 300 ms with 100 clusters; every update shown
within 1 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time

from prometheus_client import CollectorRegistry
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from syncer.agent.fleet_page import FleetPage
from syncer.agent.http import AgentServer, Endpoints
from syncer.agent.ui import PageRoutes
from syncer.config.settings import HttpSettings
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.engine.fleet_pass import PassResult
from syncer.engine.revision import Advance, PollOutcome

FIRST_RENDER_GOAL = 0.300
UPDATE_GOAL = 1.0
WAVES = ("canary", "early", "rest")

FIRST_RENDER = """
const done = arguments[arguments.length - 1];
const look = () => document.body.dataset.version ? done(performance.now()) : setTimeout(look, 5);
look();
"""
WATCH = """
window.__shown = [];
new MutationObserver(() => {
  const wave = document.querySelector('.wave[data-wave="canary"]');
  if (wave) window.__shown.push([wave.dataset.state, Date.now()]);
}).observe(document.getElementById('waves'), {childList: true, subtree: true});
"""


def picture(size: int, objects: int) -> FleetPage:
    names = [f"cluster-{i:03d}" for i in range(size)]
    page = FleetPage(WAVES, names, lambda: None)
    states = {}
    for i, name in enumerate(names):
        wave = WAVES[0] if i == 0 else WAVES[1] if i < max(2, size // 10) else WAVES[2]
        inventory = tuple(
            InventoryEntry("redis.syncer.dev/v1alpha1", "RedisCluster", f"ns-{i}", f"cache-{j}")
            for j in range(objects)
        )
        states[name] = ClusterSyncState(
            name, "a" * 40, SyncPhase.HEALTHY, wave, inventory, health="healthy", last_good="a" * 40
        )
    page.after_pass(PassResult(Advance(PollOutcome.UNCHANGED, None), states=states))
    return page


def browser() -> webdriver.Chrome:
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        sys.exit("bench_ui: Debian's chromium and chromium-driver are needed: run scripts/bootstrap")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(driver))


def measure(chrome: webdriver.Chrome, size: int, args: argparse.Namespace) -> tuple[float, float, float]:
    page = picture(size, args.objects)
    endpoints = Endpoints(
        CollectorRegistry(), lambda: (True, ""), lambda: (True, ""), page=PageRoutes(page, "")
    )
    server = AgentServer(endpoints, HttpSettings(port=0)).start()
    try:
        url = f"http://127.0.0.1:{server.port}/ui"
        renders = []
        for _ in range(args.loads):
            chrome.get(url)
            renders.append(chrome.execute_async_script(FIRST_RENDER) / 1000)
        chrome.execute_script(WATCH)
        time.sleep(0.5)  # the event stream is open (it sends the picture at once)
        latencies = []
        for i in range(args.updates):
            step = Step.GATE_WAIT if i % 2 == 0 else Step.GATE_PROCEED
            expected = "waiting" if step is Step.GATE_WAIT else "done"
            told = time.time()
            page.tell(PassEvent(step, "canary", waiting=Waiting.HEALTH if step is Step.GATE_WAIT else None))
            deadline = time.monotonic() + 5
            shown = None
            while shown is None and time.monotonic() < deadline:
                seen = chrome.execute_script("return window.__shown;")
                shown = next(
                    (at for state, at in seen if state == expected and at / 1000 >= told - 0.05), None
                )
                if shown is None:
                    time.sleep(0.01)
            latencies.append(max(shown / 1000 - told, 0.0) if shown is not None else float("inf"))
            chrome.execute_script("window.__shown = [];")
        return statistics.median(renders), statistics.median(latencies), max(latencies)
    finally:
        page.close()
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--objects", type=int, default=10)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    chrome = browser()
    missed = []
    try:
        print(f"{'clusters':>8} {'first render':>13} {'update median':>14} {'update worst':>13}")
        for size in sizes:
            render, median, worst = measure(chrome, size, args)
            print(f"{size:>8} {render * 1000:>10.0f} ms {median * 1000:>11.0f} ms {worst * 1000:>10.0f} ms")
            if size >= 100 and render > FIRST_RENDER_GOAL:
                missed.append(f"first render with {size} clusters {render * 1000:.0f} ms > 300 ms")
            if worst > UPDATE_GOAL:
                missed.append(f"an update with {size} clusters took {worst * 1000:.0f} ms > 1 s")
    finally:
        chrome.quit()
    for problem in missed:
        print(f"goal missed: {problem}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
