"""A real browser for the tests of the pictures: headless Chromium from the system's packages (`apt-get install
chromium`; `.ci/run` installs it). Where it is missing, the tests that need it skip with the reason, except in CI
(`CI=true`), where they fail: there the picture must be seen drawn."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List

import pytest

from .png import Pixel, read_png

NAMES = ("chromium", "chromium-browser")
# no network, no first-run work, no profile of its own but a fresh one
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--force-device-scale-factor=1")


def chromium() -> str:
    """The path of Chromium; skips the test where it is missing, fails it in CI."""
    found = next((path for path in map(shutil.which, NAMES) if path), None)
    if found is None:
        reason = ("Chromium is not installed (apt-get install chromium): the pictures are not seen drawn in a "
                  "browser")
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI must install it (.ci/run)")
        pytest.skip(reason)
    return found


def screenshot(browser: str, page: Path, width: int, height: int, out: Path) -> List[List[Pixel]]:
    """The pixels of `page` (a file) as Chromium draws it in a window of `width` x `height`, saved to `out` too."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={out}",
                        f"--window-size={width},{height}", page.resolve().as_uri()],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120, check=True)
    return read_png(out)
