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


def answering(target: str, rate: float, codes: dict[str, int]) -> dict:
    return {"workload": "d-70k-topics", "target": target, "round": 0,
            "route": {"rate": rate, "p99_ms": 2.0, "codes": codes}, "server_peak_pss_mb": 80.0}


def test_rates_of_the_same_error_compare_and_say_which() -> None:
    """Every server refuses the layout's registration: their TOPIC_NOT_EXIST replies compare."""
    results = [answering("node", 180.0, {"17": 1000}), answering("java-5.5", 200.0, {"17": 999})]
    (rate,) = [r for r in compare(results) if r["metric"] == "rate"]
    assert (rate["ratio"], rate["code"]) == (0.9, "17")
    assert ratio_lines([rate])[0].startswith("d-70k-topics: node route (code 17) rate = 0.90 x")


def test_successes_against_errors_or_mixed_codes_compare_nothing() -> None:
    assert compare([answering("node", 180.0, {"0": 1000}),
                    answering("rust", 900.0, {"17": 1000})]) == []
    assert compare([answering("node", 180.0, {"0": 900, "17": 100}),
                    answering("java-5.5", 90.0, {"0": 900, "17": 100})]) == []
    both_ok = compare([answering("node", 180.0, {"0": 1000}),
                       answering("java-5.5", 90.0, {"0": 995, "1": 5})])
    assert {r["metric"]: r["ratio"] for r in both_ok} == {"rate": 2.0, "p99_ms": 1.0,
                                                          "pss_mb": 1.0}
    assert all(r["code"] == "0" for r in both_ok)
    assert "(code" not in ratio_lines(both_ok)[0]
