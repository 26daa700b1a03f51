"""Debian's chromium, headless, driven by selenium through Debian's chromium-driver, for the fleet
page's tests: a driver per test, the page's wave states as the page rendered them (recorded in the
browser by a MutationObserver, so no quick state is missed between two looks), and screenshots at
the widths the page must work at, saved in the test's output directory."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM, DRIVER = "chromium", "chromedriver"
WIDTHS = {"wide": 1280, "narrow": 390}

# Installed after the page has rendered once: every render of a wave's state is pushed to
# window.__waveStates as [wave, state] when it differs from that wave's last one.
RECORD_WAVES = """
window.__waveStates = [];
const last = {};
const look = () => {
  for (const wave of document.querySelectorAll('.wave')) {
    const name = wave.dataset.wave, state = wave.dataset.state;
    if (last[name] !== state) { last[name] = state; window.__waveStates.push([name, state]); }
  }
};
look();
new MutationObserver(look).observe(document.getElementById('waves'), {childList: true, subtree: true,
  attributes: true});
"""


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless chromium; the test fails (never skips) when the set-up has not installed it."""
    binary, driver = shutil.which(CHROMIUM), shutil.which(DRIVER)
    if binary is None or driver is None:
        pytest.fail(
            "the fleet page's browser tests need Debian's chromium and chromium-driver: run scripts/bootstrap"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument(f"--window-size={WIDTHS['wide']},900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(driver))
    try:
        yield browser
    finally:
        browser.quit()


def wave_states(browser: webdriver.Chrome) -> list[tuple[str, str]]:
    seen: list[list[str]] = browser.execute_script("return window.__waveStates || [];")
    return [(wave, state) for wave, state in seen]


def text_of(browser: webdriver.Chrome, selector: str) -> str:
    found: Any = browser.execute_script(
        "const n = document.querySelector(arguments[0]); return n ? n.textContent : null;", selector
    )
    return str(found) if found is not None else ""


def screenshots(browser: webdriver.Chrome, out: Path, name: str) -> list[Path]:
    """The page at each width, as PNG files in ``out``."""
    saved = []
    for label, width in WIDTHS.items():
        browser.set_window_size(width, 900)
        height = browser.execute_script("return document.documentElement.scrollHeight;")
        browser.set_window_size(width, max(int(height), 600))
        path = out / f"{name}-{label}.png"
        assert browser.save_screenshot(str(path)), path
        saved.append(path)
    browser.set_window_size(WIDTHS["wide"], 900)
    return saved
