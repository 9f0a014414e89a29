"""``pynamesrv bench``: route and registration throughput against a fresh node or an address."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cluster.bench.runner import find_rmqload, measure
from cluster.bench.workloads import DEFAULT, WORKLOADS
from cluster.core.durations import duration, go_duration
from cluster.core.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmark a node (rmqload workloads) against the baseline")
    p.add_argument("-w", "--workload", action="append", choices=sorted(WORKLOADS),
                   help=f"workload (repeatable; default: {', '.join(DEFAULT)})")
    p.add_argument("-a", "--addr", help="measure a running server instead of a fresh node")
    p.add_argument("--baseline", action="store_true",
                   help="also measure the fixed-response uvloop server (Python's speed limit)")
    p.add_argument("--java", action="store_true",
                   help="also measure the real Java NameServer 4.9.8 (../shared/java-rocketmq, "
                        "1 GB heap), same workloads, same run")
    p.add_argument("--java-warmup", type=duration, default=30.0,
                   help="warm-up for the Java side (its JIT needs it; default 30s)")
    p.add_argument("--warmup", type=duration, default=3.0, help="warm-up per workload (3s)")
    p.add_argument("--duration", type=duration, default=10.0,
                   help="measured time per workload (10s)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="node setting for the fresh node (e.g. businessWorkers=2)")
    p.add_argument("--rmqload", help="path to an rmqload binary")
    p.add_argument("--out", type=Path, help="write all results as JSON here")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_run)


def _props(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--set {pair!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _run(args: argparse.Namespace) -> int:
    binary = find_rmqload(args.rmqload)
    props = _props(args.set)
    results = []
    for name in args.workload or DEFAULT:
        targets = ["node"]
        if args.baseline and name.startswith("route"):
            targets.append("baseline")
        if args.java:
            targets.append("java")
        for target in targets:
            warmup = args.java_warmup if target == "java" else args.warmup
            r = measure(binary, WORKLOADS[name], target, props, go_duration(warmup),
                        go_duration(args.duration), args.addr)
            results.append(r)
            if not args.json:
                print(_row(r), flush=True)
    _ratios(results)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    if args.json:
        json.dump([{k: v for k, v in r.items() if k != "raw"} for r in results], sys.stdout,
                  indent=1)
        print()
    return 0 if all(not r.get("errors") for r in results) else 1


def _row(r: dict) -> str:
    parts = [f"{r['workload']:<16} {r['target']:<9}"]
    for side in ("route", "register"):
        if side in r:
            s = r[side]
            rate = s["rate"] or 0
            parts.append(f"{side} {rate:>10,.0f}/s p50 {s['p50_ms']} ms p99 {s['p99_ms']} ms "
                         f"p999 {s['p999_ms']} ms")
    if "server_cpu_util" in r:
        parts.append(f"server cpu {r['server_cpu_util']:.2f} peak pss {r['server_peak_pss_mb']} MB")
    parts.append(f"client cpu {r.get('client_cpu')} errors {r.get('errors')}")
    return " | ".join(parts)


def _ratios(results: list[dict]) -> None:
    """Node over baseline and over Java, per workload and side, from this run."""
    by = {(r["workload"], r["target"]): r for r in results}
    for (name, target), r in by.items():
        if target != "node":
            continue
        for other, field in (("baseline", "fraction_of_baseline"), ("java", "ratio_to_java")):
            ref = by.get((name, other))
            for side in ("route", "register"):
                if ref is None or side not in r or not (ref.get(side) or {}).get("rate"):
                    continue
                ratio = (r[side]["rate"] or 0) / ref[side]["rate"]
                key = field if side == "route" else f"{field}_{side}"
                r[key] = round(ratio, 3)
                print(f"{name}: node {side} = {ratio:.2f} x {other}", file=sys.stderr)
