"""Ratios of the node to its peers from alternating rounds: median and spread."""

from __future__ import annotations

from cluster.bench.compare import compare, ratio_lines


def result(workload: str, target: str, round_no: int, rate: float, p99: float,
           pss: float) -> dict:
    return {"workload": workload, "target": target, "round": round_no,
            "route": {"rate": rate, "p99_ms": p99}, "server_peak_pss_mb": pss}


def test_ratios_are_taken_per_round_then_the_median() -> None:
    results = [result("route", "node", 0, 100.0, 1.0, 100.0),
               result("route", "java-5.5", 0, 50.0, 2.0, 400.0),
               result("route", "java-5.5", 1, 40.0, 4.0, 400.0),
               result("route", "node", 1, 120.0, 1.0, 100.0),
               result("route", "node", 2, 90.0, 2.0, 100.0),
               result("route", "java-5.5", 2, 45.0, 2.0, 400.0)]
    by = {(r["other"], r["metric"]): r for r in compare(results)}
    rate = by[("java-5.5", "rate")]
    assert (rate["ratio"], rate["min"], rate["max"], rate["rounds"]) == (2.0, 2.0, 3.0, 3)
    assert rate["node"] == 100.0 and rate["value"] == 45.0
    assert by[("java-5.5", "p99_ms")]["ratio"] == 0.5
    assert by[("java-5.5", "pss_mb")]["ratio"] == 0.25
    line = next(x for x in ratio_lines(compare(results)) if "rate" in x)
    assert line.startswith("route: node route rate = 2.00 x java-5.5 (2.00-3.00, 3 rounds)")


def test_a_round_without_the_node_or_a_rate_gives_no_ratio() -> None:
    results = [result("route", "rust", 0, 10.0, 1.0, 5.0),
               {"workload": "route", "target": "node", "round": 1, "route": {"rate": 0}}]
    assert compare(results) == []
