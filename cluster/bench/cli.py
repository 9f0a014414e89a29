"""``pynamesrv bench``: route and registration throughput of a fresh node (or an address)
beside the baseline, the Java NameServers and the Rust NameServer, in one run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cluster.bench.compare import compare, ratio_lines
from cluster.bench.report import row_line
from cluster.bench.runner import find_rmqload, measure
from cluster.bench.servers import JAVA_HEAP, JAVA_PREFIX, parse_target
from cluster.bench.workloads import DEFAULT, GROUPS, WORKLOADS, expand
from cluster.core.argtypes import Subparsers
from cluster.core.durations import duration, go_duration
from cluster.core.errors import UserError
from cluster.peers.catalog import RELEASES

SMALL_HEAP = "512m"
JAVA_DEFAULT = (*(r.name for r in RELEASES.values() if r.in_setup),
                *(f"{r.name}@{SMALL_HEAP}" for r in RELEASES.values()
                  if r.in_setup and r.major >= 5))


def register(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="benchmark a node (rmqload workloads) beside its peers")
    p.add_argument("-w", "--workload", action="append",
                   choices=sorted([*WORKLOADS, *GROUPS]),
                   help=f"workload, or `shapes` for the production shapes (repeatable; "
                        f"default: {', '.join(DEFAULT)})")
    p.add_argument("-a", "--addr", help="measure a running server instead of a fresh node")
    p.add_argument("--baseline", action="store_true",
                   help="also measure the fixed-response uvloop server (Python's speed limit)")
    p.add_argument("--java", action="store_true",
                   help="also measure the real Java NameServers (4.9 and 5.x, installed from "
                        "Maven Central by `pynamesrv peer install`), same workloads, same run")
    p.add_argument("--java-release", action="append", metavar="RELEASE[@HEAP]",
                   help="with --java: which releases, each with the heap of --java-heap or the "
                        f"one given (repeatable; known: {', '.join(RELEASES)}; default: "
                        f"{', '.join(JAVA_DEFAULT)})")
    p.add_argument("--java-heap", default=JAVA_HEAP,
                   help=f"Java heap (default {JAVA_HEAP}, RocketMQ's start script's)")
    p.add_argument("--java-warmup", type=duration, default=30.0,
                   help="warm-up for the Java side (its JIT needs it; default 30s)")
    p.add_argument("--rust", action="store_true",
                   help="also measure the Rust NameServer (crates.io rocketmq-namesrv; "
                        "installed on first use, compiling for about 12 minutes)")
    p.add_argument("--rounds", type=int, default=1,
                   help="run every target this many times, in alternating order; report "
                        "medians and the spread (default 1)")
    p.add_argument("--warmup", type=duration, default=3.0, help="warm-up per workload (3s)")
    p.add_argument("--duration", type=duration, default=10.0,
                   help="measured time per workload (10s)")
    p.add_argument("--no-restart", action="store_true",
                   help="skip the time-to-serve-after-a-restart part of the shapes")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="node setting for the fresh node (e.g. businessWorkers=2)")
    p.add_argument("--rmqload", help="path to an rmqload binary")
    p.add_argument("--out", type=Path, help="write all results as JSON here")
    p.add_argument("--plot", type=Path,
                   help="write a PNG of memory and route p99 against topics x brokers here "
                        "(needs matplotlib: pip install -e '.[bench]')")
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


def _targets(args: argparse.Namespace, workload: str) -> list[str]:
    targets = ["node"]
    if args.baseline and workload.startswith("route"):
        targets.append("baseline")
    if args.java:
        targets += [f"{JAVA_PREFIX}{r}" for r in args.java_release or JAVA_DEFAULT]
    if args.rust:
        targets.append("rust")
    return targets


def _check(args: argparse.Namespace) -> None:
    if args.rounds < 1:
        raise UserError(f"--rounds {args.rounds}: must be 1 or more")
    for name in args.java_release or ():
        parse_target(f"{JAVA_PREFIX}{name}")
    if args.plot is not None:
        from cluster.bench.plot import require_matplotlib

        require_matplotlib()


def _run(args: argparse.Namespace) -> int:
    _check(args)
    binary = find_rmqload(args.rmqload)
    props = _props(args.set)
    results = []
    for round_no in range(args.rounds):
        for name in expand(args.workload or list(DEFAULT)):
            targets = _targets(args, name)
            shift = round_no % len(targets)
            for target in targets[shift:] + targets[:shift]:  # alternate the order per round
                java = target.startswith(JAVA_PREFIX)
                warmup = args.java_warmup if java else args.warmup
                r = measure(binary, WORKLOADS[name], None if args.addr else parse_target(target),
                            props, go_duration(warmup), go_duration(args.duration), args.addr,
                            args.java_heap, restarts=not args.no_restart)
                r["round"] = round_no
                results.append(r)
                if not args.json:
                    print(row_line(r), flush=True)
    ratios = compare(results)
    for line in ratio_lines(ratios):
        print(line, file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps({"results": results, "ratios": ratios}, indent=1))
    if args.plot:
        from cluster.bench.plot import plot

        plot(results, args.plot)
        print(f"bench: plot written to {args.plot}", file=sys.stderr)
    if args.json:
        json.dump({"results": [{k: v for k, v in r.items() if k != "raw"} for r in results],
                   "ratios": ratios}, sys.stdout, indent=1)
        print()
    return 0 if all(not r.get("errors") for r in results) else 1
