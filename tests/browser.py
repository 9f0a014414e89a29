"""Headless Chromium for page tests: the DOM after load, and screenshots kept as artefacts.

Debian's ``chromium`` (scripts/setup.sh installs it) is run once per call in
its own process group, with a deadline, and reaped by the test's Reaper.
Screenshots go under the test's tmp dir and are copied to ``test-artifacts/``
at the repository root.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Reaper
from tests.nodeproc import ROOT

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
ARTIFACTS = ROOT / "test-artifacts"
CALL_TIMEOUT_S = 60.0
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--force-device-scale-factor=1")


def find_chromium() -> str | None:
    explicit = os.environ.get("PYNAMESRV_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return next((p for c in CANDIDATES if (p := shutil.which(c))), None)


class Browser:
    def __init__(self, exe: str, profile: Path, reaper: Reaper, artifacts: Path) -> None:
        self.exe = exe
        self.profile = profile
        self.reaper = reaper
        self.artifacts = artifacts

    def _run(self, *args: str) -> str:
        proc = self.reaper.spawn([self.exe, *FLAGS, f"--user-data-dir={self.profile}", *args],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            out, _ = proc.communicate(timeout=CALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"chromium did not finish within {CALL_TIMEOUT_S:g}s") from None
        assert proc.returncode == 0, f"chromium exited with {proc.returncode}"
        return out

    def dom(self, url: str, wait_ms: int = 1000) -> str:
        """The document as serialised after load (and ``wait_ms`` of the page's own timers)."""
        return self._run(f"--virtual-time-budget={wait_ms}", "--dump-dom", url)

    def screenshot(self, url: str, name: str, width: int = 1280, height: int = 900,
                   wait_ms: int = 1000) -> Path:
        """A PNG of the page, under the test's artefact dir and copied to test-artifacts/."""
        path = self.artifacts / name
        self._run(f"--virtual-time-budget={wait_ms}", f"--window-size={width},{height}",
                  f"--screenshot={path}", url)
        assert path.is_file() and path.stat().st_size > 0, f"no screenshot written to {path}"
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy2(path, ARTIFACTS / name)
        return path


def open_browser(tmp_path: Path, reaper: Reaper) -> Browser:
    """A Browser for this test, or a skip saying how to get one."""
    exe = find_chromium()
    if exe is None:
        pytest.skip("no headless browser: install Debian's chromium (scripts/setup.sh does), "
                    "or set PYNAMESRV_CHROMIUM to a Chromium binary")
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    return Browser(exe, tmp_path / "chromium-profile", reaper, artifacts)
