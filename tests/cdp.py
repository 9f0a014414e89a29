"""Headless Chromium driven over the DevTools protocol on a pipe, to time pages in real time.

``--dump-dom`` runs on virtual time, which says nothing about speed; here Chromium is
started with ``--remote-debugging-pipe`` (commands on its fd 3, replies and events on
its fd 4, each a JSON message ending in a NUL byte), a page is opened, navigated and
asked for its Navigation Timing and whatever a script measures. The process is
started through the test's Reaper and closed (then killed) at the end.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from tests.browser import FLAGS
from tests.conftest import Reaper

CALL_TIMEOUT_S = 60.0
# exec argv[3:] with the pipe ends argv[1] and argv[2] as its fds 3 and 4 (copied above 9
# first, so either may already be 3 or 4)
ONTO_3_AND_4 = ("import fcntl, os, sys; a, b = (fcntl.fcntl(int(f), fcntl.F_DUPFD, 10) "
                "for f in sys.argv[1:3]); os.dup2(a, 3); os.dup2(b, 4); "
                "os.execv(sys.argv[3], sys.argv[3:])")


class DevTools:
    def __init__(self, exe: str, profile: Path, reaper: Reaper, width: int = 1280,
                 height: int = 900) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._evt_r, evt_w = os.pipe()
        args = [*FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
                f"--window-size={width},{height}", "about:blank"]
        self.proc = reaper.spawn([sys.executable, "-c", ONTO_3_AND_4, str(cmd_r), str(evt_w),
                                  exe, *args], pass_fds=(cmd_r, evt_w),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(evt_w)
        self._ids = itertools.count(1)
        self._buf = b""
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target,
                                                            "flatten": True})["sessionId"]
        self.call("Page.enable", session=True)

    def close(self) -> None:
        with contextlib.suppress(AssertionError, OSError):  # it may be gone already
            self.call("Browser.close", timeout=5.0)
        for fd in (self._cmd_w, self._evt_r):
            os.close(fd)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._evt_r], [], [], left)[0]:
                raise AssertionError("chromium did not answer in time")
            chunk = os.read(self._evt_r, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed its DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        doc: dict[str, Any] = orjson.loads(msg)
        return doc

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = False, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        mid = next(self._ids)
        msg: dict[str, Any] = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, orjson.dumps(msg) + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            doc = self._read(deadline)
            if doc.get("id") == mid:
                assert "error" not in doc, f"{method}: {doc['error']}"
                result: dict[str, Any] = doc.get("result", {})
                return result
            self.events.append(doc)

    def wait_event(self, method: str, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            doc = self._read(deadline)
            if doc.get("method") == method:
                return doc
            self.events.append(doc)

    def navigate(self, url: str) -> dict[str, float]:
        """Load ``url``; its Navigation Timing (ms from the navigation's start)."""
        self.events.clear()
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")
        timing: dict[str, float] = self.evaluate(
            "(()=>{const n=performance.getEntriesByType('navigation')[0];"
            "return {responseEnd:n.responseEnd, domContentLoaded:n.domContentLoadedEventEnd,"
            " load:n.loadEventEnd, bytes:n.transferSize};})()")
        return timing

    def evaluate(self, expression: str, timeout: float = CALL_TIMEOUT_S) -> Any:
        """The value of a JavaScript expression (a promise is awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=True,
                           timeout=timeout)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")
