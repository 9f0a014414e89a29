"""The supervisor's status page in a real headless browser, against a live 3-node cluster.

`pynamesrv up` with ``supervisor.status_http`` set: the page shows three
running nodes that agree; with n3 paused and a broker registered to n1 and
n2 only, it shows n3 not answering and the broker missing on n3 (from n3's
last answer); once n3 is resumed it answers, still without the broker (no
heartbeat came), and the page shows that live. Screenshots are artefacts.
"""

from __future__ import annotations

import re
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload
from supervisor.control_client import ControlClient, ControlUnavailable
from tests.browser import Browser, open_browser
from tests.conftest import Reaper
from tests.nodeproc import ROOT, free_ports, poll_until

pytestmark = pytest.mark.integration

BOOT_S = 90.0
PAGE_S = 30.0
BROKER = BrokerIdentity("DefaultCluster", "broker-status", "127.0.0.1:20911", 0,
                        "127.0.0.1:20912")
TOPICS = {f"StatusTopic{i}": {"topicName": f"StatusTopic{i}", "readQueueNums": 4,
                              "writeQueueNums": 4, "perm": 6} for i in range(3)}


class StatusCluster:
    def __init__(self, root: Path, reaper: Reaper) -> None:
        control, http, *nodes = free_ports(5)
        self.root = root
        self.control = f"tcp://127.0.0.1:{control}"
        self.url = f"http://127.0.0.1:{http}/"
        self.addrs = {f"n{i + 1}": f"127.0.0.1:{p}" for i, p in enumerate(nodes)}
        self.path = root / "cluster.yaml"
        lines = [f"control: {self.control}", "data_dir: data", "supervisor:",
                 "  probe_interval_ms: 200", "  readiness_timeout_s: 60",
                 f"  status_http: 127.0.0.1:{http}", "nodes:"]
        lines += [f"  - {{name: {n}, port: {a.rpartition(':')[2]}}}"
                  for n, a in self.addrs.items()]
        self.path.write_text("\n".join(lines) + "\n")
        reaper.track_marker(str(root))
        self.log = open(root / "up.log", "wb")  # noqa: SIM115 - closed in close()
        self.proc = reaper.spawn([sys.executable, "-m", "cluster.cli", "up", "-c", str(self.path)],
                                 cwd=root, stdout=self.log, stderr=subprocess.STDOUT)
        self.client = ControlClient(self.control, timeout=5.0)

    def running(self) -> bool:
        try:
            return all(n["state"] == "running" for n in self.client.status())
        except ControlUnavailable:
            assert self.proc.poll() is None, (self.root / "up.log").read_text()
            return False

    def cli(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "cluster.cli", *args, "-c", str(self.path)],
                       cwd=ROOT, check=True, capture_output=True, timeout=60)

    def status_json(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "status.json", timeout=10) as resp:
            doc: dict[str, Any] = orjson.loads(resp.read())
            return doc

    def close(self) -> None:
        try:
            self.client.request("shutdown")
            self.proc.wait(60)
        except (ControlUnavailable, subprocess.TimeoutExpired):
            pass
        self.client.close()
        self.log.close()


@pytest.fixture
def cluster(tmp_path: Path, reaper: Reaper) -> Iterator[StatusCluster]:
    c = StatusCluster(tmp_path, reaper)
    try:
        poll_until(c.running, BOOT_S, 0.2, "every node running")
        yield c
    finally:
        c.close()


def _text(dom: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


def _node_state(dom: str, node: str) -> str | None:
    m = re.search(rf'data-node="{node}" data-state="(\w+)"', dom)
    return m.group(1) if m else None


def _difference_row(dom: str, table: str, key: str) -> str:
    for m in re.finditer(rf'<tr data-table="{table}">(.*?)</tr>', dom, re.S):
        if f'class="key">{key}<' in m.group(1):
            return _text(m.group(1))
    return ""


def _banner(dom: str) -> str:
    m = re.search(r'id="agreement">(.*?)</section>', dom, re.S)
    return _text(m.group(1)).strip() if m else ""


def _wait_dom(browser: Browser, url: str, ok: Any, what: str) -> str:
    def ready() -> str:
        dom = browser.dom(url)
        return dom if ok(dom) else ""
    return poll_until(ready, PAGE_S, 0.5, what)


def test_page_shows_nodes_and_live_disagreement(cluster: StatusCluster, tmp_path: Path,
                                                reaper: Reaper) -> None:
    browser = open_browser(tmp_path, reaper)
    dom = _wait_dom(browser, cluster.url,
                    lambda d: "All 3 nodes agree" in d
                    and all(_node_state(d, n) == "running" for n in cluster.addrs),
                    "3 running nodes that agree")
    assert "answering (" in dom and "Disagreement right now" in dom
    browser.screenshot(cluster.url, "status-page-3-running.png")

    cluster.cli("pause", "n3")
    with BrokerOuterAPI(list(cluster.addrs.values())) as api:
        payload = RegisterPayload.build({"counter": 1, "timestamp": 1700000000000}, TOPICS)
        result = api.register_broker_all(BROKER, payload, timeout=5.0,
                                         addrs=[cluster.addrs["n1"], cluster.addrs["n2"]])
        assert result.all_ok, result
        dom = _wait_dom(browser, cluster.url,
                        lambda d: 'data-broker="127.0.0.1:20911"' in d
                        and "not answering" in d and _node_state(d, "n3") == "paused",
                        "broker-status on n1 and n2, n3 paused")
        banner = _banner(dom)
        assert banner.startswith("n1 and n2 agree: 1 broker (1 address, 1 live), 3 topics")
        assert "n3 is not answering: whether it agrees is unknown." in banner
        assert "All 3" not in banner
        browser.screenshot(cluster.url, "status-page-n3-paused.png")
        doc = cluster.status_json()
        n3 = next(n for n in doc["nodes"] if n["name"] == "n3")
        assert n3["state"] == "paused" and n3["answer"]["text"].startswith("not answering")

        cluster.cli("resume", "n3")
        dom = _wait_dom(browser, cluster.url,
                        lambda d: _node_state(d, "n3") == "running"
                        and "broker-status" in _difference_row(d, "broker", "broker-status"),
                        "n3 answering again, live without broker-status")
        row = _difference_row(dom, "broker", "broker-status")
        assert "n1 n2" in row and "missing on n3" in row, row
        assert re.search(r"The nodes disagree on .*1 broker, 3 topic entries.*\(odd: n3 on \d+\)",
                         _banner(dom)), _banner(dom)
        assert "is not answering" not in _banner(dom)
        assert re.search(r'<tr data-lane="n3">.*?class="s-silent".*?class="s-diverge"', dom,
                         re.S), "n3's lane: not answering, then diverging"
        beats = re.search(r'data-broker="127.0.0.1:20911">(.*?)</tr>', dom, re.S)
        assert beats and re.search(r"n1 \d+ s.*n2 \d+ s.*n3 -", _text(beats.group(1)))
        keys = browser.dom(cluster.url + "keys?node=n3&table=topic")
        assert _text(keys).count("StatusTopic") == 3 and "3 of " in _text(keys)
        browser.screenshot(cluster.url, "status-page-n3-resumed-missing.png")
        dom = browser.dom(cluster.url, wait_ms=5000)  # after a refresh or two
        assert re.search(r"live, updated \d\d:\d\d:\d\d<", dom), "24-hour time after refresh"
