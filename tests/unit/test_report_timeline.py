"""Report pages without Spark: the timeline model, its SVG, the audit page and the chaos page.

Inputs come from ``tests.report_samples`` (n3 paused from +10 s to +16 s, then
missing broker-<a> until +19 s).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cluster.audit.report_html import audit_page
from cluster.audit.timeline import Fault, from_audit, from_faults
from cluster.audit.timeline_svg import render, tick_label, tick_step
from cluster.chaos.report_html import REPORT_HTML, faults, write_report
from tests.report_samples import PAUSE, T0, at, audit_doc, chaos_run


def test_lanes_name_the_pause_and_list_the_keys_of_a_divergence() -> None:
    tl = from_audit(audit_doc(), [PAUSE])
    assert [lane.label for lane in tl.lanes] == ["node faults", "n1", "n2", "n3"]
    n3 = tl.lanes[-1]
    kinds = {s.kind: s for s in n3.spans}
    assert set(kinds) == {"paused", "diverging"}
    assert kinds["paused"].tip[-1] == "fault: pause_node n3"
    assert "broker broker-<a>: missing (3.0s)" in kinds["diverging"].tip
    assert (tl.t0, tl.t1) == (T0, at(30))
    late = audit_doc()
    late["verdict"]["bound_ms"] = 155_000
    scaled = from_audit(late)
    assert scaled.t1 == at(30), "the range is the data's, not the bound's (16 s + 155 s)"
    svg = render(scaled)
    assert "bound 155.0s ends 141.0s after the last round" in svg
    assert svg.count("<path") == 1, "an arrow for the bound past the end"
    inside = render(tl)
    assert "bound 9.0s</text>" not in inside and ">bound 9.0s<title>" in inside
    assert [m.label for m in tl.marks] == ["faults stopped", "bound 9.0s"]
    assert tl.series["broker"][32] == (at(16), 1) and tl.series["broker"][0] == (T0, 0)
    without = from_audit(audit_doc())
    assert {s.kind for s in without.lanes[-1].spans} == {"unavailable", "diverging"}


def test_ticks_are_round_times() -> None:
    assert tick_step(30_000) == 5000 and tick_step(4_000) == 500 and tick_step(600_000) == 60_000
    assert tick_label(at(5), 5000, True) == "22:13:25"
    assert tick_label(at(5.5), 500, True) == "22:13:25.5"
    assert tick_label(12_000, 2000, False) == "+12s"
    svg = render(from_audit(audit_doc()))
    labels = re.findall(r'class="tick">([^<]+)<', svg)
    assert labels == ["22:13:20", "22:13:25", "22:13:30", "22:13:35", "22:13:40", "22:13:45",
                      "22:13:50"]


def test_svg_bars_are_hoverable_escaped_and_self_contained() -> None:
    svg = render(from_audit(audit_doc(), [PAUSE]))
    assert 'id="div-n3-1"' in svg and 'id="down-n3-0"' in svg and 'id="fault-0"' in svg
    assert "broker-&lt;a&gt;" in svg and "broker-<a>" not in svg
    assert svg.count('tabindex="0"') == 3 + 2  # three bars, two marks
    assert "<polyline" in svg


def test_audit_page_leads_with_the_verdict_and_says_none_for_empty_tables() -> None:
    page = audit_page(audit_doc(diverge=False))
    assert page.index('id="verdict"') < page.index('id="timeline"') < page.index('id="details"')
    assert "Eventually consistent: the nodes never disagreed" in page
    assert page.count('<p class="none">none</p>') == 2  # worst keys, intervals
    assert page.count("<thead><tr><th>node</th><th>start</th>") == 2  # n3 unavailable
    failing = audit_page(audit_doc(holds=False))
    assert "NOT eventually consistent: 1 key(s) disagree" in failing
    assert "/runs/&lt;x&gt;" in failing
    assert not re.search(r"(src|href)=\"(https?:)?//", failing), "nothing from the network"


def test_chaos_faults_come_from_the_history_on_the_audit_clock(tmp_path: Path) -> None:
    got = faults(chaos_run(tmp_path), T0, True)
    assert [(f.fault, f.start - T0, f.end - T0, f.ok, f.lane) for f in got] == [
        ("pause_node", 10002, 16100, True, "node"), ("broker_crash", 12000, 14000, False, "broker"),
        ("hostile_client", 20000, 20000, True, "client")]
    assert got[0].tip[1] == "applied +10.0s (22:13:30.002 UTC)"
    assert got[1].tip[1].endswith("FAILED: boom")


@pytest.mark.parametrize("with_audit", [True, False])
def test_chaos_page_has_verdict_timeline_checks_and_schedule(tmp_path: Path,
                                                             with_audit: bool) -> None:
    path = write_report(chaos_run(tmp_path, with_audit))
    assert path == tmp_path / REPORT_HTML
    page = path.read_text()
    order = [page.index(f'id="{s}"') for s in ("verdict", "timeline", "checks", "schedule")]
    assert order == sorted(order)
    assert "FAIL: pause-node (seed 7): node_recovers" in page
    assert "--scenario pause-node --seed 7 --duration 30s" in page
    assert "&quot;late_by_s&quot;: 1.5" in page and "<details open>" in page
    assert ('id="down-n3-0"' in page) is with_audit
    assert ("Audit: not run" in page) is not with_audit
    assert ("+10s" in page) is not with_audit  # relative ticks without the audit's clock
    assert "pause node" in page and "<script>" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page), "nothing from the network"


def test_fault_only_timeline_spans_the_run() -> None:
    tl = from_faults([Fault(2000, 5000, "kill_node", "n1", "node", ("k",))], 30_000)
    assert (tl.t0, tl.t1, tl.clock) == (0, 30_000, False)
    assert [lane.label for lane in tl.lanes] == ["node faults"]
