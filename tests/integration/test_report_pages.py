"""The audit and chaos report pages in a real headless browser, offline, from file:// URLs.

Each page is opened whole (screenshot kept as an artefact) and with a bar's
tooltip shown through ``#tip=ID``: the script runs, the tooltip holds the
bar's lines, and nothing was fetched from the network (the pages have no
external references, checked in tests/unit/test_report_timeline.py).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from cluster.audit.report_html import audit_page
from cluster.chaos.report_html import write_report
from tests.browser import Browser, open_browser
from tests.conftest import Reaper
from tests.report_samples import audit_doc, chaos_run

pytestmark = pytest.mark.integration


def _tooltip(dom: str) -> str:
    m = re.search(r'<div id="tip" role="tooltip" style="([^"]*)">(.*?)</div>', dom, re.S)
    assert m is not None, "the tooltip element is missing"
    assert "display: block" in m.group(1), "the tooltip is not shown"
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(2)))


@pytest.fixture
def browser(tmp_path: Path, reaper: Reaper) -> Browser:
    return open_browser(tmp_path, reaper)


def test_audit_page_shows_its_timeline_and_a_divergence_tooltip(browser: Browser,
                                                                 tmp_path: Path) -> None:
    page = tmp_path / "audit-report.html"
    page.write_text(audit_page(audit_doc()), encoding="utf-8")
    url = page.as_uri()
    dom = browser.dom(url)
    assert 'id="verdict"' in dom and "Eventually consistent: 1 divergence interval(s)" in dom
    tip = _tooltip(browser.dom(url + "#tip=div-n3-1"))
    assert tip.startswith("n3 diverging from 22:13:36.000 to 22:13:39.000 (3.0s)")
    assert "broker broker-<a>: missing (3.0s)" in tip
    browser.screenshot(url, "audit-report.png", height=1100)
    browser.screenshot(url + "#tip=div-n3-1", "audit-report-tooltip.png", height=640)


def test_chaos_page_shows_faults_on_the_audit_timeline(browser: Browser,
                                                       tmp_path: Path) -> None:
    url = write_report(chaos_run(tmp_path / "run")).as_uri()
    dom = browser.dom(url)
    assert "FAIL: pause-node (seed 7): node_recovers" in dom and 'id="checks"' in dom
    tip = _tooltip(browser.dom(url + "#tip=fault-0"))
    assert tip.startswith("pause_node n3 (event 0)")
    assert "applied +10.0s (22:13:30.002 UTC)" in tip and "undone +16.1s" in tip
    tip = _tooltip(browser.dom(url + "#tip=down-n3-0"))
    assert tip.startswith("n3 not answering (paused)") and "fault: pause_node n3" in tip
    browser.screenshot(url, "chaos-report.png", height=1300)
    browser.screenshot(url + "#tip=down-n3-0", "chaos-report-tooltip.png", height=640)
