"""``pynamesrv audit collect``, ``audit run`` and ``audit watch``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cluster.audit.collector import CollectPlan, RoundResult, Target, TerminalProgress, collect
from cluster.audit.reader import Kind, ReadLimits
from cluster.audit.rows import BoundInputs
from cluster.client.targets import add_source_args, resolve_args
from cluster.core.argtypes import Subparsers, host_port, int_range
from cluster.core.durations import duration
from cluster.core.errors import UserError

if TYPE_CHECKING:
    from cluster.audit.inputs import BadInput

EXIT_HOLDS, EXIT_FAILS = 0, 1
EXIT_NEVER_ANSWERED = 1  # collect: some node answered in no round (audit run refuses that)


def node_spec(text: str) -> Target:
    name, sep, addr = text.partition("=")
    host, _, port = addr.rpartition(":")
    if not sep or not name or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=HOST:PORT, got {text!r}")
    return Target(name, host, int(port))


def register(sub: Subparsers) -> None:
    audit = sub.add_parser("audit", help="consistency audit of the cluster's nodes")
    asub = audit.add_subparsers(dest="audit_command", metavar="SUBCOMMAND")
    asub.required = True
    _register_collect(asub)
    _register_run(asub)
    _register_watch(asub)


def _register_collect(asub: Subparsers) -> None:
    p = asub.add_parser("collect", help="poll every node's snapshot into JSON-lines files")
    add_source_args(p)
    p.add_argument("--node", action="append", type=node_spec, metavar="NAME=HOST:PORT",
                   help="poll this node, under this name (repeatable; instead of -n or -c)")
    p.add_argument("--interval", type=duration, default=2.0, help="between rounds (2s)")
    p.add_argument("--duration", type=duration, default=60.0, help="how long to collect (60s)")
    p.add_argument("--timeout", type=duration, default=None,
                   help="per-request timeout (default: the interval, at most 1s)")
    p.add_argument("--out", required=True, help="new directory for the rows and manifest")
    add_read_args(p)
    p.add_argument("--heartbeat-period", type=duration, default=None,
                   help="broker heartbeat period for the bound (default from the config)")
    p.add_argument("--scan-interval", type=duration, default=None,
                   help="expiry scan period for the bound (default from the config)")
    p.add_argument("--expiry", type=duration, default=None,
                   help="broker expiry for the bound (default from the config)")
    p.set_defaults(func=_collect)


def add_read_args(p: argparse.ArgumentParser) -> None:
    """How nodes are read (``cluster.audit.reader``): kind, budget, concurrency, KV."""
    d = ReadLimits()
    p.add_argument("--read", choices=("auto", "snapshot", "standard"), default="auto",
                   help="auto: the snapshot (code 60001) where a node answers it, else "
                        "RocketMQ's own codes; or force one way for every node (auto)")
    p.add_argument("--budget", type=int, default=d.budget, metavar="N",
                   help=f"requests per node and round at most, routes included ({d.budget})")
    p.add_argument("--concurrency", type=int, default=d.concurrency, metavar="N",
                   help=f"requests in flight per node ({d.concurrency})")
    p.add_argument("--kv-namespace", action="append", metavar="NS",
                   help="KV namespace to compare on nodes read the standard way (repeatable; "
                        f"default {', '.join(d.namespaces)})")


def read_limits(args: argparse.Namespace, timeout: float) -> ReadLimits:
    force = None if args.read == "auto" else Kind(args.read)
    namespaces = tuple(args.kv_namespace) if args.kv_namespace else ReadLimits().namespaces
    try:
        return ReadLimits(timeout, args.concurrency, args.budget, namespaces, force)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _register_run(asub: Subparsers) -> None:
    p = asub.add_parser("run", help="analyse a collection on Spark and give a verdict")
    p.add_argument("dir", help="collection directory or any URI Spark can read")
    p.add_argument("--master", default="local[2]", help="Spark master (local[2])")
    p.add_argument("--bound", type=duration, default=None, metavar="D",
                   help="convergence bound, e.g. 90s (default: heartbeat + scan + expiry "
                        "from the manifest)")
    p.add_argument("--report-dir", default=None,
                   help="where to write audit-report.json/.html (default: DIR, or . for a URI)")
    p.add_argument("--driver-memory", default=None, metavar="SIZE",
                   help="Spark driver heap, e.g. 768m or 2g "
                        "(default: $PYNAMESRV_AUDIT_DRIVER_MEMORY, else 512m)")
    p.set_defaults(func=_run)


def _register_watch(asub: Subparsers) -> None:
    p = asub.add_parser("watch", help="print the nodes' divergence every round, from their "
                                      "table digests (GET_NODE_DIGEST)")
    add_source_args(p)
    p.add_argument("--node", action="append", type=node_spec, metavar="NAME=HOST:PORT",
                   help="watch this node, under this name (repeatable; instead of -n or -c)")
    p.add_argument("--interval", type=duration, default=2.0, help="between rounds (2s)")
    p.add_argument("--timeout", type=duration, default=None,
                   help="per-request deadline (default: the interval, at most 1s)")
    p.add_argument("--duration", type=duration, default=None,
                   help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--rounds", type=int_range(1, 10**9), default=None,
                   help="stop after this many rounds")
    p.add_argument("--show", type=int_range(0, 10**6), default=10,
                   help="differing entries listed when they change (10)")
    p.add_argument("--metrics", type=host_port, default=None, metavar="HOST:PORT",
                   help="serve the divergence gauges for Prometheus at http://HOST:PORT/metrics")
    p.set_defaults(func=_watch)


def _watch(args: argparse.Namespace) -> int:
    from cluster.audit.watch import WatchPlan, watch

    targets, _ = _targets(args)
    if len(targets) < 2:
        raise UserError("audit watch compares nodes: give at least two")
    timeout = args.timeout if args.timeout is not None else min(args.interval, 1.0)
    if timeout > args.interval:
        raise UserError("--timeout must not exceed --interval")
    plan = WatchPlan(tuple((t.name, t.host, t.port) for t in targets), args.interval,
                     timeout, args.duration, args.rounds, args.show, args.metrics)
    return watch(plan)


def _targets(args: argparse.Namespace) -> tuple[list[Target], BoundInputs]:
    """The nodes of ``--node``, else ``-n`` / ``-c`` (``targets.resolve_args``), and the
    bound's timings of the cluster file when there is one, else RocketMQ's defaults."""
    bound = BoundInputs()
    if args.node:
        if args.namesrv or args.config:
            raise UserError("--node replaces -n and -c; give one of them")
        targets = list(args.node)
    else:
        nodes = resolve_args(args)
        targets = [Target(n.name, n.host, n.port) for n in nodes.nodes]
        if nodes.config is not None:
            cfg = nodes.config
            bound = BoundInputs(cfg.broker_heartbeat_ms, cfg.scan_interval_ms, cfg.expiry_ms)
    if len({t.name for t in targets}) != len(targets):
        raise UserError("two nodes share a name")
    return targets, bound


def _targets_and_bound(args: argparse.Namespace) -> tuple[list[Target], BoundInputs]:
    """``_targets``, with the bound's timings overridden by the options that give them."""
    targets, bound = _targets(args)
    for attr, arg in (("heartbeat_period_ms", args.heartbeat_period),
                      ("scan_interval_ms", args.scan_interval), ("expiry_ms", args.expiry)):
        if arg is not None:
            setattr(bound, attr, round(arg * 1000))
    return targets, bound


def _collect(args: argparse.Namespace) -> int:
    targets, bound = _targets_and_bound(args)
    timeout = args.timeout if args.timeout is not None else min(args.interval, 1.0)
    if timeout > args.interval:
        raise UserError("--timeout must not exceed --interval")
    plan = CollectPlan(targets, Path(args.out), args.interval, args.duration, timeout, bound,
                       read_limits(args, timeout))
    progress, answers = TerminalProgress(), Answers([t.name for t in targets])

    def seen(result: RoundResult, total: int) -> None:
        progress(result, total)
        answers(result, progress)

    try:
        manifest = collect(plan, seen)
    finally:
        progress.close()
    print(f"collected {manifest.rounds} rounds from {len(targets)} nodes into {args.out}")
    if answers.never:
        print(f"pynamesrv audit: warning: {', '.join(answers.never)} answered in none of the "
              f"{manifest.rounds} rounds; `audit run` refuses this collection", file=sys.stderr)
        return EXIT_NEVER_ANSWERED
    return 0


class Answers:
    """Which nodes never answered; warns at once when nobody answered the first round."""

    def __init__(self, nodes: list[str]) -> None:
        self._never = dict.fromkeys(nodes)

    @property
    def never(self) -> list[str]:
        return list(self._never)

    def __call__(self, result: RoundResult, progress: TerminalProgress) -> None:
        firsts = {n: rows[0] for n, rows in result.rows_by_node.items()}
        for node, row in firsts.items():
            if row["available"]:
                self._never.pop(node, None)
        if result.round_no == 0 and not any(r["available"] for r in firsts.values()):
            progress.close()
            reasons = "; ".join(f"{n}: {r.get('error')}" for n, r in firsts.items())
            print(f"pynamesrv audit: warning: no node answered the first round ({reasons})",
                  file=sys.stderr, flush=True)


def _run(args: argparse.Namespace) -> int:
    # pyspark is imported here, not at the top: every `pynamesrv` command loads this module.
    from cluster.audit import report
    from cluster.audit.inputs import BadInput, has_scheme, resolve_input
    from cluster.audit.job import analyse
    from cluster.audit.session import StageProgress, build_session, has_active_session

    try:
        resolve_input(args.dir)
    except BadInput as exc:
        return _bad_input(exc)
    owned = not has_active_session()
    spark = build_session(args.master, memory=args.driver_memory)
    try:
        with StageProgress(spark.sparkContext):
            result = analyse(spark, args.dir, args.bound)
    except BadInput as exc:
        return _bad_input(exc)
    finally:
        if owned:
            spark.stop()
    out = Path(args.report_dir or ("." if has_scheme(args.dir) else args.dir))
    out.mkdir(parents=True, exist_ok=True)
    report.write_json(result, out / "audit-report.json")
    report.write_html(result, out / "audit-report.html")
    print(report.summary_text(result))
    print(f"report: {out / 'audit-report.json'}, {out / 'audit-report.html'}")
    return EXIT_HOLDS if result.verdict.holds else EXIT_FAILS


def _bad_input(exc: BadInput) -> int:
    print("pynamesrv audit: bad input:", file=sys.stderr)
    for line in exc.problems:
        print(f"  {line}", file=sys.stderr)
    return exc.exit_code
