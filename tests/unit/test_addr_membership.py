"""Which nodes the address service lists (fake clock): running, answering, agreeing.

The differences come from a divergence round over the nodes' tables (``Watch`` with
``TablesDigest`` sources), as the service's come from the nodes' digests."""

from __future__ import annotations

import copy
from typing import Any

from cluster.addr.membership import Membership, NodeView
from cluster.audit import standard_view as sv
from cluster.core.digest_source import TablesDigest
from cluster.core.divergence_watch import Watch
from supervisor.reload import plan
from tests.fake_namesrv import tables

AFTER = 15.0


def _t(brokers: dict[str, list[str]]) -> dict[str, Any]:
    return sv.project(tables(brokers), ())


FULL = _t({"broker-a": ["T0", "T1"], "broker-b": ["T1"]})
NO_B = _t({"broker-a": ["T0", "T1"]})
EMPTY = _t({})


def _step(m: Membership, now: float, **nodes: dict[str, Any] | None) -> dict[str, bool]:
    """One step: ``nodes`` maps a node to its tables, or None when it does not answer."""
    answering = {n: t for n, t in nodes.items() if t is not None}
    watch = Watch({n: TablesDigest(n, "tables", lambda _t, t=t: (1, t))
                   for n, t in answering.items()}, deadline_s=1.0)
    try:
        differences = watch.round().comparison.differences if answering else ()
    finally:
        watch.close()
    views = [NodeView(n, f"127.0.0.1:{9876 + i}", t is not None, "" if t else "timeout")
             for i, (n, t) in enumerate(nodes.items())]
    return {s.name: s.listed for s in m.update(views, differences, now)}


def test_nodes_that_agree_are_listed_at_once() -> None:
    m = Membership(AFTER)
    assert _step(m, 0, n1=FULL, n2=FULL, n3=FULL) == {"n1": True, "n2": True, "n3": True}
    assert [s.reason for s in m.listed()] == ["agrees with the majority"] * 3


def test_a_diverged_node_leaves_after_the_bound_and_says_why() -> None:
    m = Membership(AFTER)
    _step(m, 0, n1=FULL, n2=FULL, n3=FULL)
    for now in (1.0, 8.0, 15.9):  # n2 lost broker-b (its connection was cut) at 1 s
        assert _step(m, now, n1=FULL, n2=NO_B, n3=FULL)["n2"], now
    assert _step(m, 16.0, n1=FULL, n2=NO_B, n3=FULL) == {"n1": True, "n2": False, "n3": True}
    reason = m.nodes["n2"].reason
    assert reason.startswith("diverged: 3 entries differ from the majority for 15.0s")
    assert "broker broker-b" in reason and "topic T1/broker-b" in reason
    # it comes back once the broker registers with it again
    assert _step(m, 20.0, n1=FULL, n2=FULL, n3=FULL)["n2"]


def test_a_brief_difference_keeps_the_node_listed() -> None:
    m = Membership(AFTER)
    _step(m, 0, n1=FULL, n2=FULL, n3=FULL)
    assert _step(m, 1, n1=FULL, n2=NO_B, n3=FULL)["n2"]  # a dead broker expired early on n2
    assert _step(m, 6, n1=NO_B, n2=NO_B, n3=NO_B)["n2"]  # ... and on the others at their scan
    assert _step(m, 30, n1=NO_B, n2=NO_B, n3=NO_B)["n2"]
    assert m.nodes["n2"].differing == {}


def test_a_silent_node_leaves_at_once_and_rejoins_only_once_caught_up() -> None:
    m = Membership(AFTER)
    _step(m, 0, n1=FULL, n2=FULL, n3=FULL)
    assert _step(m, 1, n1=FULL, n2=None, n3=FULL)["n2"] is False
    assert m.nodes["n2"].reason == "timeout"
    # restarted empty: not listed while the brokers have not registered with it again
    assert _step(m, 2, n1=FULL, n2=EMPTY, n3=FULL)["n2"] is False
    assert m.nodes["n2"].reason.startswith("catching up: 6 entries differ")
    assert _step(m, 3, n1=FULL, n2=NO_B, n3=FULL)["n2"] is False
    assert _step(m, 4, n1=FULL, n2=FULL, n3=FULL)["n2"] is True


def test_a_tie_is_broken_by_the_listed_nodes_or_left_undecided() -> None:
    m = Membership(AFTER)
    _step(m, 0, n1=FULL, n2=FULL, n3=FULL)
    _step(m, 1, n1=FULL, n2=None, n3=None)  # two nodes down
    # n2 comes back empty: one against one, the listed n1 decides
    assert _step(m, 2, n1=FULL, n2=EMPTY, n3=None) == {"n1": True, "n2": False, "n3": False}
    # two listed nodes that differ, the third silent: nobody can tell who is right
    m2 = Membership(AFTER)
    _step(m2, 0, n1=FULL, n2=FULL)
    assert _step(m2, 100, n1=FULL, n2=NO_B) == {"n1": True, "n2": True}
    assert _step(m2, 200, n1=FULL, n2=NO_B) == {"n1": True, "n2": True}


def test_a_node_removed_from_the_views_is_forgotten() -> None:
    m = Membership(AFTER)
    _step(m, 0, n1=FULL, n2=FULL, n3=FULL)
    assert _step(m, 1, n1=FULL, n3=FULL) == {"n1": True, "n3": True}
    assert set(m.nodes) == {"n1", "n3"}


def test_reload_plan_names_added_removed_changed_and_ignored(tmp_path: Any) -> None:
    from cluster.core.config import load_cluster

    def cfg(nodes: str, extra: str = "") -> Any:
        (tmp_path / "c.yaml").write_text(f"control: tcp://127.0.0.1:19870\n{extra}nodes:\n{nodes}")
        return copy.deepcopy(load_cluster(tmp_path / "c.yaml"))

    old = cfg("  - {name: n1, port: 19876}\n  - {name: n2, port: 19877}\n")
    new = cfg("  - {name: n1, port: 19876, settings: {orderMessageEnable: true}}\n"
              "  - {name: n3, port: 19878}\n", "supervisor: {probe_interval_ms: 500}\n")
    p = plan(old, new)
    assert p.summary() == {"added": ["n3"], "removed": ["n2"], "changed": ["n1"],
                           "ignored": ["supervisor.probe_interval_ms"]}
    assert plan(old, old).summary() == {"added": [], "removed": [], "changed": [], "ignored": []}
