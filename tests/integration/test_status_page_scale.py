"""The status page at production size, timed in a real headless Chromium.

Three nodes (in memory, through the real digests and gatherer) where n1 and n2 hold
100,000 topic entries that n3 lacks, 200 brokers, and a few entries whose content
differs: the page must load and refresh fast, showing counts, groups and the first
rows, with the rest a filter away on /keys. Prints the figures (``-s``).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cluster.core.config import load_cluster
from supervisor.broker_rows import BrokerBook
from supervisor.status.gather import Gatherer
from supervisor.status.page import StatusPage
from tests.browser import ARTIFACTS, find_chromium
from tests.cdp import DevTools
from tests.conftest import Reaper
from tests.nodeproc import free_port
from tests.unit.test_status_page import Fakes, _node

pytestmark = pytest.mark.integration
BROKERS = 200
TOPICS_PER_BROKER = 500  # one broker per topic: 100,000 topic entries
LOAD_BOUND_MS = 5000.0  # generous: the CI machine is shared and noisy
REFRESH_BOUND_MS = 3000.0


def _tables(with_topics: bool) -> dict[str, Any]:
    q = {"perm": 6, "readQueueNums": 8, "topicSysFlag": 0, "writeQueueNums": 8}
    brokers = {f"broker-{b}": {"cluster": f"cluster-{b % 4}",
                               "brokerAddrs": {"0": f"10.0.{b // 200}.{b % 200}:10911"}}
               for b in range(BROKERS)}
    topics = ({f"Topic-{b}-{i}": {f"broker-{b}": dict(q)} for b in range(BROKERS)
               for i in range(TOPICS_PER_BROKER)} if with_topics else {})
    return {"cluster": {f"cluster-{c}": sorted(n for n in brokers if int(n[7:]) % 4 == c)
                        for c in range(4)}, "broker": brokers, "topic": topics,
            "filter": {}, "live": {}, "kv": {}}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StatusPage]:
    root = tmp_path_factory.mktemp("scale")
    big = _tables(True)
    odd = _tables(False)
    odd["topic"] = {"Topic-7-1": {"broker-7": {"perm": 4, "readQueueNums": 8, "topicSysFlag": 0,
                                               "writeQueueNums": 8}}}
    fakes = Fakes({"n1": big, "n2": big, "n3": odd})
    http = free_port()
    cfg = root / "cluster.yaml"
    cfg.write_text(f"control: tcp://127.0.0.1:{free_port()}\nsupervisor:\n"
                   f"  status_http: 127.0.0.1:{http}\nnodes:\n"
                   + "".join(f"  - {{name: n{i}, port: {free_port()}}}\n" for i in (1, 2, 3)))
    p = StatusPage(load_cluster(cfg), "127.0.0.1", http)
    p.gatherer = Gatherer(p.board, [], make_source=fakes.source,
                          brokers=BrokerBook(version_of=lambda addr: ""))
    p.board.publish_supervisor(time.time(), False,
                               [_node(n, i) for i, n in enumerate(fakes.tables, 1)], [])
    p.gatherer.gather_once()
    p.start(gather=False)
    yield p
    p.close()


def test_page_holds_up_at_100000_disagreeing_entries(page: StatusPage, tmp_path: Path,
                                                      reaper: Reaper) -> None:
    state = page.board.read()
    assert state.round is not None
    assert len(state.round.comparison.differences) == BROKERS * TOPICS_PER_BROKER
    exe = find_chromium()
    if exe is None:
        pytest.skip("no headless browser: install Debian's chromium (scripts/setup.sh does)")
    tools = DevTools(exe, tmp_path / "profile", reaper)
    try:
        first = tools.navigate(page.url)
        refresh = tools.evaluate(
            "new Promise((ok, no) => { const t0 = Date.now(); (function poll() {"
            " const r = window.pnsRefresh; if (r && r.count >= 2) return ok(r);"
            " if (Date.now() - t0 > 20000) return no(new Error('no refresh'));"
            " setTimeout(poll, 100); })(); })", timeout=30)
        rows = tools.evaluate("document.querySelectorAll('tr').length")
        text = tools.evaluate("document.body.innerText")
        shot = tools.call("Page.captureScreenshot", {"format": "png"}, session=True)
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "status-page-100000-entries.png").write_bytes(
            base64.b64decode(shot["data"]))
        keys = tools.navigate(page.url + "keys?table=topic&q=Topic-19")
        key_rows = tools.evaluate("document.querySelectorAll('tbody tr').length")
        key_text = tools.evaluate("document.body.innerText")
    finally:
        tools.close()
    print(f"\nstatus page, 100,000 entries: load {first['load']:.0f} ms "
          f"({first['bytes'] / 1024:.0f} KiB), refresh fetch {refresh['fetchMs']:.0f} ms + "
          f"swap {refresh['swapMs']:.0f} ms ({refresh['bytes'] / 1024:.0f} KiB), {rows} rows; "
          f"/keys filtered: load {keys['load']:.0f} ms, {key_rows} rows")
    assert "100,000 entries in" in text and "broker-7" in text
    odd = next(d for d in state.round.comparison.differences if d.key == "Topic-7-1")
    assert state.round.note(odd) == "perm: 4 on n3; 6 on n1, n2"
    assert rows < 600, "the page lists the first entries and groups, not every entry"
    assert "5,500 of 100,000 entries match; the first 200 are shown" in key_text
    assert key_rows == 200
    assert first["load"] < LOAD_BOUND_MS and keys["load"] < LOAD_BOUND_MS
    assert refresh["fetchMs"] + refresh["swapMs"] < REFRESH_BOUND_MS
