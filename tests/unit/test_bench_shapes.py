"""The production shapes' bookkeeping: workload groups, figures from rmqload's result, the
ratios they give, targets, whole routes after a restart, the plot's points."""

from __future__ import annotations

import pytest

from cluster.bench.compare import compare
from cluster.bench.plot import points
from cluster.bench.restart import Expect, expectations, whole
from cluster.bench.servers import Target, parse_target
from cluster.bench.workloads import GROUPS, WORKLOADS, expand, summary
from cluster.core.errors import UserError

LAT = {"p50": 100.0, "p99": 2000.0, "p999": 3000.0}


def rmqload_result(route_code: int = 105, reads_ok: bool = True) -> dict:
    return {
        "mode": "route", "errors": 0, "client": {"cpu_util": 0.5},
        "route": {"code": route_code, "rps": 1000.0, "responses": 10000, "lat_us": LAT,
                  "codes": {"0": 10000} if reads_ok else {"17": 10000}},
        "register": {"brokers": 300, "names": 150, "topics": 10000, "topics_per_broker": 10000,
                     "topic_configs": 3000000, "requests_per_registration": 1,
                     "body_bytes_max": 2000000, "regs_per_s": 10.0, "responses": 100,
                     "lat_us": LAT, "codes": {"0": 100},
                     "setup": {"registrations": 300, "regs_per_s": 50.0, "lat_us": LAT,
                               "codes": {"0": 300}}}}


def test_shapes_group_expands_to_known_workloads_once() -> None:
    names = expand(["route", "shapes"])
    assert names[0] == "route" and names.count("route") == 1
    assert set(names) == {"route", *GROUPS["shapes"]}
    assert all(n in WORKLOADS for n in names)
    assert all(WORKLOADS[n].restart for n in GROUPS["shapes"] if n[0] in "abcde")


def test_a_route_workload_reports_heartbeats_setup_and_layout() -> None:
    got = summary(rmqload_result())
    assert got["route"]["rate"] == 1000.0 and got["route"]["p99_ms"] == 2.0
    assert "register" not in got  # a route workload's brokers follow their schedule
    assert got["heartbeat"]["rate"] == 10.0 and got["setup"]["rate"] == 50.0
    assert got["layout"]["topic_configs"] == 3000000


def row(target: str, round_no: int, rate: float, serve: float | None,
        reads_ok: bool = True) -> dict:
    r = {"workload": "a", "target": target, "round": round_no,
         **summary(rmqload_result(reads_ok=reads_ok)), "server_peak_pss_mb": 100.0}
    r["route"]["rate"] = rate
    r["restart"] = {"serve_s": serve}
    return r


def test_ratios_skip_heartbeat_rates_error_replies_and_missing_restarts() -> None:
    got = {(r["side"], r["other"], r["metric"]): r["ratio"] for r in compare([
        row("node", 0, 2000.0, 1.5), row("java-5.5", 0, 500.0, 30.0),
        row("rust", 0, 900.0, None, reads_ok=False)])}
    assert got[("route", "java-5.5", "rate")] == 4.0
    assert got[("restart", "java-5.5", "serve_s")] == 0.05
    assert ("heartbeat", "java-5.5", "p99_ms") in got
    assert ("heartbeat", "java-5.5", "rate") not in got
    assert ("setup", "java-5.5", "rate") in got
    assert not any(other == "rust" and side == "route" for side, other, _ in got)
    assert not any(side == "restart" and other == "rust" for side, other, _ in got)


@pytest.mark.parametrize("name,want", [
    ("node", Target("node")), ("rust", Target("rust")), ("java-4.9", Target("java", "4.9")),
    ("java-5.5@512m", Target("java", "5.5", "512m"))])
def test_targets_parse_and_keep_their_names(name: str, want: Target) -> None:
    assert parse_target(name) == want and want.name == name


@pytest.mark.parametrize("name", ["java-9.9", "jvm", "java-"])
def test_unknown_targets_are_refused(name: str) -> None:
    with pytest.raises(UserError):
        parse_target(name)


def test_a_route_is_whole_with_every_broker_name_and_address() -> None:
    want = expectations({"sample": [{"topic": "T", "names": 2, "addrs": 4}]})[0]
    assert want == Expect("T", 2, 4)
    full = {"brokerDatas": [{"brokerAddrs": {0: "a", 1: "b"}}, {"brokerAddrs": {0: "c", 1: "d"}}]}
    half = {"brokerDatas": [{"brokerAddrs": {0: "a", 1: "b"}}, {"brokerAddrs": {1: "d"}}]}
    assert whole(full, want) and not whole(half, want) and not whole(None, want)


def test_plot_points_are_route_lookups_with_a_layout_by_topic_configs() -> None:
    small = {"workload": "s", "target": "node", "layout": {"topic_configs": 1000},
             "route": {"p99_ms": 0.1}, "server_peak_pss_mb": 90.0, "raw": {"route": {"code": 105}}}
    big = {**small, "workload": "b", "layout": {"topic_configs": 10**6}, "route": {"p99_ms": 2.0}}
    listing = {**big, "workload": "e", "raw": {"route": {"code": 206}}}
    again = {**big, "route": {"p99_ms": 4.0}, "server_peak_pss_mb": 110.0}
    java = {**small, "target": "java-5.5", "server_peak_pss_mb": 900.0}
    got = points([big, small, listing, again, java])
    assert got["node"] == [(1000.0, 90.0, 0.1, "s"), (1e6, 100.0, 3.0, "b")]
    assert got["java-5.5"] == [(1000.0, 900.0, 0.1, "s")]
