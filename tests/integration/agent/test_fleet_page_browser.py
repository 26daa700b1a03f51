"""The fleet page in a real headless chromium, served by a real ``syncer run`` rolling signed
commits out to the real fleet: the page follows the rollout wave by wave as it happens (no reload),
shows a failing wave failed with its reason, also after its clusters went back to their last good
revision (and ``syncer_wave_state`` with it), and a cluster it cannot reach as unreachable, renders a
commit subject and an object name full of markup as text without running any of it, shows a
cluster's detail (its recorded history, its objects with the last apply's action and health, the
last change, and the guard verdict of a refused downgrade), is usable by keyboard and at 1280 and
390 pixels wide (screenshots of both in the test's output directory)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml
from selenium.common.exceptions import ElementNotInteractableException, StaleElementReferenceException
from selenium.webdriver import Chrome as WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.integration.agent.browser import RECORD_WAVES, WIDTHS, chromium, screenshots, text_of, wave_states
from tests.integration.agent.drills import FAST, commit_per_cluster, lease_flags, no_traceback, write_policy
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.test_agent_process import (
    LABELS,
    ROLLOUT_TIMEOUT,
    Rig,
    agents,
    redis_cluster,
    rig,
)
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
__all__ = ["agents", "rig"]  # fixtures

HOSTILE = (
    'sessions <script>document.title="pwned";window.pwned=1</script><img src=x onerror="window.pwned=2">'
)
HOSTILE_NAME = "<script>window.pwned=3</script>"
PAGE_TIMEOUT = 10
GUARDS = """
rules:
  - name: no-redis-downgrade
    kinds: [RedisCluster]
    actions: [update]
    expression: "!semver(new.spec.version, true).isLessThan(semver(old.spec.version, true))"
    message: the Redis version must not go down
"""


def with_guards(rig: Rig) -> None:
    """The agent's config names a guard policy refusing a Redis downgrade."""
    (rig.root / "guards.yaml").write_text(GUARDS)
    config = yaml.safe_load((rig.root / "agent.yaml").read_text())
    config["guardPolicy"] = "guards.yaml"
    (rig.root / "agent.yaml").write_text(yaml.safe_dump(config))


def rows(browser: WebDriver, table: str) -> list[list[str]]:
    """The cells of each row of the detail's ``table``, as the page shows them now."""
    found: list[list[str]] = browser.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr')]"
        ".map((r) => [...r.cells].map((c) => c.textContent));",
        f"#detail-{table}",
    )
    return found


def open_detail(browser: WebDriver, cluster: str) -> None:
    """Enter on the cluster's cell (as drawn at that moment: the page redraws it on each event)."""
    eventually(
        f"Enter on the {cluster} cell",
        lambda: press(browser, f'.cluster[data-cluster="{cluster}"]', Keys.ENTER),
        10,
    )
    eventually("the detail", lambda: text_of(browser, "#detail-title") == f"Cluster {cluster}", PAGE_TIMEOUT)


def open_page(browser: WebDriver, proc: AgentProc) -> None:
    browser.get(f"http://127.0.0.1:{proc.port()}/ui")
    eventually(
        "the page to render the fleet",
        lambda: browser.execute_script("return document.body.dataset.version;"),
        PAGE_TIMEOUT,
    )
    browser.execute_script(RECORD_WAVES)


def nothing_ran(browser: WebDriver) -> None:
    """No markup from git became an element and none of its script ran."""
    run = browser.execute_script
    assert browser.title == "syncer fleet"
    assert run("return window.pwned;") is None
    assert run("return document.scripts.length;") == 1
    assert run("return document.querySelectorAll('main img, main script').length;") == 0


def first(states: list[tuple[str, str]], wave: str, state: str) -> int:
    return states.index((wave, state)) if (wave, state) in states else -1


@pytest.mark.slow
def test_the_page_follows_a_rollout_wave_by_wave_and_shows_git_text_as_text(
    rig: Rig, agents: Agents, tmp_path: Path
) -> None:
    rig.start_controllers()
    with_guards(rig)
    with agents.shown_on_failure(), chromium() as browser:
        # The remote has no commit yet: the page is open and recording before the rollout starts.
        # A Lease of the test's own: the default one may still be held by an agent of an earlier test,
        # and the page would wait out that Lease before the rollout starts.
        proc = agents.start("agent", rig.args("three-waves.yaml", *lease_flags(rig, "canary")))
        open_page(browser, proc)
        sha = rig.commit(HOSTILE, "7.2.4")
        eventually(
            "the page to show the last wave passed",
            lambda: ("us", "passed") in wave_states(browser),
            3 * ROLLOUT_TIMEOUT,
        )
        states = wave_states(browser)
        canary = [s for w, s in states if w == "canary"]
        assert canary[canary.index("applying") :][:1] == ["applying"], states
        assert {"waiting-health", "baking"} & set(canary[canary.index("applying") :]), states
        assert first(states, "canary", "applying") < first(states, "canary", "passed"), states
        assert first(states, "canary", "passed") < first(states, "eu", "applying"), states
        assert first(states, "eu", "passed") < first(states, "us", "applying"), states

        eventually("the revision in force", lambda: sha[:12] in text_of(browser, "#in-force"), PAGE_TIMEOUT)
        assert text_of(browser, "#in-force .subject") == HOSTILE
        assert text_of(browser, "#in-force .signer") == "ops"
        nothing_ran(browser)

        # Keyboard: open a cluster's detail with Enter, close it with Escape.
        open_detail(browser, "eu-1")
        # Its objects with the action of the apply and their health; the change; the recorded history.
        eventually(
            "the RedisCluster created and healthy",
            lambda: (
                ["RedisCluster", rig.namespace, "sessions", "create", "✓ healthy"]
                in [[*r[:4], r[4].split(":")[0]] for r in rows(browser, "objects")]
            ),
            PAGE_TIMEOUT,
        )
        assert [f"RedisCluster/{rig.namespace}/sessions", "create", "applied"] in [
            r[:3] for r in rows(browser, "diff")
        ]
        assert sha[:12] in text_of(browser, "#detail-diff-title")
        eventually(
            "the history the cluster records",
            lambda: (
                [r[0] for r in rows(browser, "history")] == [sha[:12]]
                and rows(browser, "history")[0][1] == "ops"
                and rows(browser, "history")[0][5] == "healthy"
            ),
            ROLLOUT_TIMEOUT,
        )
        assert rows(browser, "verdicts") == [["no guard or analysis verdict"]]
        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        assert browser.execute_script("return document.getElementById('detail').hidden;")
        # Read in one script: the page redraws on every update, and an element found before could be
        # gone when read.
        assert browser.execute_script("return document.activeElement.dataset.cluster;") == "eu-1"

        # An object named with markup: the tip is refused, its reason (naming the object) shown as text.
        hostile_rc = redis_cluster(rig.namespace, "7.2.4")
        hostile_rc["metadata"]["name"] = HOSTILE_NAME
        docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rig.namespace}}, hostile_rc]
        refused = rig.work.commit(
            "hostile name", {"base/objects.yaml": yaml.safe_dump_all(docs)}, sign=rig.key
        )
        rig.work.git("push", "-q", str(rig.remote), "main")
        eventually(
            "the refused tip",
            lambda: refused[:12] in text_of(browser, "#rejected"),
            ROLLOUT_TIMEOUT,
        )
        assert HOSTILE_NAME in text_of(browser, "#rejected .reason")
        assert "base/objects.yaml" in text_of(browser, "#rejected .reason")
        nothing_ran(browser)

        # A downgrade: the guard refuses the tip, and a cluster's detail names the rule that failed.
        down = rig.commit("sessions down", "7.2")
        eventually(
            "the refused downgrade", lambda: down[:12] in text_of(browser, "#rejected"), ROLLOUT_TIMEOUT
        )
        open_detail(browser, "eu-1")
        verdicts = rows(browser, "verdicts")
        assert [r[:3] for r in verdicts] == [["guard", "no-redis-downgrade", "✗ fail"]], verdicts
        assert "7.2.4" in verdicts[0][5]

        for path in screenshots(browser, tmp_path, "rollout"):
            assert path.stat().st_size > 0
        browser.set_window_size(WIDTHS["narrow"], 900)
        assert browser.execute_script("return document.documentElement.scrollWidth;") <= WIDTHS["narrow"]
        assert proc.running()
        no_traceback(proc)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def add_unreachable_cluster(rig: Rig, name: str) -> None:
    """A cluster in the fleet and the agent's config whose API server nobody listens for."""
    kubeconfig = rig.root / f"{name}.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": name, "cluster": {"server": f"https://127.0.0.1:{closed_port()}"}}],
                "users": [{"name": name, "user": {"token": "none"}}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
                "current-context": name,
            }
        )
    )
    config = yaml.safe_load((rig.root / "agent.yaml").read_text())
    config["clusters"][name] = {"context": name, "kubeconfig": str(kubeconfig)}
    (rig.root / "agent.yaml").write_text(yaml.safe_dump(config))
    clusters = [{"name": n, "labels": labels} for n, labels in LABELS.items()]
    clusters.append({"name": name, "labels": {"tier": "prod", "region": "us"}})
    fleet = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "defaults": {"namespace": rig.namespace},
        "clusters": clusters,
    }
    rig.work.write({"fleet.yaml": yaml.safe_dump(fleet)})


@pytest.mark.slow
def test_a_failing_wave_shows_failed_with_its_reason_after_its_rollback_and_an_unreachable_cluster_as_such(
    rig: Rig, agents: Agents, tmp_path: Path
) -> None:
    rig.start_controllers()
    add_unreachable_cluster(rig, "gone")
    policy = write_policy(rig, "fast.yaml", FAST)
    with agents.shown_on_failure(), chromium() as browser:
        proc = agents.start("agent", rig.args(policy, *lease_flags(rig, "canary")))
        open_page(browser, proc)
        versions = {"canary": "7.2.4", "eu-1": "7.2.4", "us-1": "7.2.4", "gone": "7.2.4"}
        good = commit_per_cluster(rig, "sessions 7.2.4", versions)
        eventually(
            "the canary wave passed", lambda: ("canary", "passed") in wave_states(browser), ROLLOUT_TIMEOUT
        )
        bad = commit_per_cluster(rig, HOSTILE, versions, hold=("canary",))
        eventually(
            "the canary wave failed and rolled back",
            lambda: (
                f"rolled back to {good[:12]}" in text_of(browser, '.wave[data-wave="canary"] .wave-reason')
            ),
            3 * ROLLOUT_TIMEOUT,
        )
        # Read in one script: the page redraws a wave on every update (an element found before may
        # be gone when it is read).
        shown_state = browser.execute_script(
            "const w = document.querySelector('.wave[data-wave=\"canary\"]');"
            "return [w.dataset.state, w.querySelector('.wave-state').textContent];"
        )
        assert shown_state[0] == "failed", shown_state
        assert shown_state[1].split()[1] == "failed", shown_state
        states = wave_states(browser)
        assert ("canary", "passed") not in states[first(states, "canary", "failed") :], states
        samples = proc.metrics()
        assert samples[f'syncer_wave_state{{revision="{bad}",state="failed",wave="canary"}}'] == 1
        assert samples[f'syncer_wave_state{{revision="{bad}",state="passed",wave="canary"}}'] == 0
        assert not [k for k in samples if k.startswith("syncer_wave_state{") and good in k], "older revision"
        assert "eu" not in {
            w for w, s in wave_states(browser)[first(states, "canary", "failed") :] if s != "pending"
        }

        gone = '.cluster[data-cluster="gone"]'
        eventually(
            "the unreachable cluster",
            lambda: "unreachable" in text_of(browser, gone),
            ROLLOUT_TIMEOUT,
        )
        reachable = browser.execute_script(
            "return document.querySelector(arguments[0]).dataset.reachable;", gone
        )
        assert reachable == "false"
        assert text_of(browser, "#rolling .subject") == HOSTILE
        nothing_ran(browser)
        screenshots(browser, tmp_path, "failed")
        assert proc.running()
        no_traceback(proc)


def press(browser: WebDriver, selector: str, key: str) -> bool:
    """Send ``key`` to the element ``selector`` finds now; False while it is being redrawn."""
    try:
        browser.find_element(By.CSS_SELECTOR, selector).send_keys(key)
    except (ElementNotInteractableException, StaleElementReferenceException):
        return False
    return True
