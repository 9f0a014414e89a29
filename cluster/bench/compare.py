"""Ratios of the node to every other target, from one run: per round, then the median of
the rounds with their spread (min–max), per workload and side (route, register, heartbeat:
a route workload's brokers registering on their schedule, setup: the layout's first
registrations, restart), for the rate, p99, memory and the time to serve again after a
restart. Two targets' rates compare when they answer with the same code (one of its replies
at least OK_SHARE of theirs): both SUCCESS, or both TOPIC_NOT_EXIST where every server
refuses a layout's registration; not one target's successes against another's errors."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

SIDES = ("route", "register", "heartbeat", "setup", "restart")
OK_SHARE = 0.99


def answered(r: dict[str, Any], side: str) -> str | None:
    """The code of at least OK_SHARE of a side's replies ("0" when none are counted), else
    None: replies of mixed codes compare nothing."""
    codes = (r.get(side) or {}).get("codes") or {}
    if not codes:
        return "0"
    code, n = max(codes.items(), key=lambda kv: kv[1])
    return code if n >= OK_SHARE * sum(codes.values()) else None


def _metrics(r: dict[str, Any], side: str) -> dict[str, float]:
    part = r.get(side) or {}
    out = {}
    if side == "restart":
        return {"serve_s": float(part["serve_s"])} if part.get("serve_s") else {}
    if part.get("rate") and side != "heartbeat":  # heartbeats follow their schedule
        out["rate"] = float(part["rate"])
    if part.get("p99_ms"):
        out["p99_ms"] = float(part["p99_ms"])
    if side == SIDES[0] and r.get("server_peak_pss_mb"):
        out["pss_mb"] = float(r["server_peak_pss_mb"])
    return out


def compare(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (workload, side, other target, metric, code both answered): node / other
    per round, the median, min and max of those ratios, and the node's and the other's
    median values."""
    by: dict[tuple[str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in results:
        by[(r["workload"], r.get("round", 0))][r["target"]] = r
    ratios: dict[tuple[str, str, str, str, str], list[tuple[float, float, float]]] = \
        defaultdict(list)
    for (workload, _), targets in sorted(by.items()):
        node = targets.get("node")
        if node is None:
            continue
        codes = {side: answered(node, side) for side in SIDES}
        for other, r in targets.items():
            if other == "node":
                continue
            for side, code in codes.items():
                if code is None or code != answered(r, side):
                    continue
                mine, theirs = _metrics(node, side), _metrics(r, side)
                for metric in mine.keys() & theirs.keys():
                    if theirs[metric]:
                        ratios[(workload, side, other, metric, code)].append(
                            (mine[metric] / theirs[metric], mine[metric], theirs[metric]))
    out = []
    for (workload, side, other, metric, code), values in sorted(ratios.items()):
        rs = [v[0] for v in values]
        out.append({"workload": workload, "side": side, "other": other, "metric": metric,
                    "ratio": round(statistics.median(rs), 3), "min": round(min(rs), 3),
                    "max": round(max(rs), 3), "rounds": len(rs),
                    "code": code,
                    "node": round(statistics.median(v[1] for v in values), 3),
                    "value": round(statistics.median(v[2] for v in values), 3)})
    return out


def ratio_lines(ratios: list[dict[str, Any]]) -> list[str]:
    """One line per ratio, e.g. ``route: node route rate = 2.10 x java-5.5 (1.9-2.3, 3 rounds)``."""
    lines = []
    for r in ratios:
        spread = f" ({r['min']:.2f}-{r['max']:.2f}, {r['rounds']} rounds)" if r["rounds"] > 1 \
            else ""
        side = r["side"] if r.get("code", "0") == "0" else f"{r['side']} (code {r['code']})"
        lines.append(f"{r['workload']}: node {side} {r['metric']} = {r['ratio']:.2f} x "
                     f"{r['other']}{spread}   [node {r['node']:g}, {r['other']} {r['value']:g}]")
    return lines
