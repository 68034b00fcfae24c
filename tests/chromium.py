"""One headless Chromium per test module, for the pages' own scripts (Selenium).

Debian's ``chromium`` and ``chromium-driver``; ``selenium`` is in the test extra.
Without them a test skips, except under ``NOVALAB_REQUIRE_SERVICES=1`` (CI), where
it fails. tests/conftest.py makes ``browser`` a fixture of every test module.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,900")


def unavailable(reason: str):
    if os.environ.get("NOVALAB_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module, driven by Debian's chromedriver."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not Path(path).exists()]
    if missing:
        unavailable(f"{' and '.join(missing)} missing (Debian: apt-get install -y chromium "
                    "chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        unavailable("selenium is not installed (it is in the test extra: pip install -e "
                    "'.[test]')")
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download anything
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def wait(driver, condition, timeout: float = 15):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.05).until(condition)


def js(driver, script: str):
    return driver.execute_script(f"return {script};")
