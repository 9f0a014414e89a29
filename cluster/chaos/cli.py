"""``pynamesrv chaos run|plan|check``: seeded fault scenarios against a local cluster."""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from cluster.chaos.cluster_file import planned_cluster
from cluster.chaos.load.plan import DEFAULT_BROKERS, DEFAULT_READS, DEFAULT_TOPICS, LoadPlan
from cluster.chaos.schedule import SCENARIOS
from cluster.core.argtypes import Subparsers, int_range
from cluster.core.config import ClusterConfig
from cluster.core.durations import duration, duration_or_zero
from cluster.core.errors import UserError

if TYPE_CHECKING:  # the runner and the checkers are imported by the commands that use them
    from cluster.chaos.runner import ChaosOptions


def register(sub: Subparsers) -> None:
    chaos = sub.add_parser("chaos", help="seeded fault scenarios checked by invariants")
    csub = chaos.add_subparsers(dest="chaos_command", metavar="ACTION")
    csub.required = True
    run = csub.add_parser("run", help="run a scenario against a fresh local cluster")
    _schedule_args(run)
    run.add_argument("--out", metavar="DIR", help="output directory (default chaos-out/...)")
    run.add_argument("--brokers", type=int_range(1, 1000), default=2,
                     help="simulated brokers (2)")
    run.add_argument("--no-audit", dest="audit", action="store_false",
                     help="skip the consistency audit (Spark) at the end of the run")
    run.set_defaults(func=cmd_run)
    plan = csub.add_parser("plan", help="print the fault schedule of a scenario and seed")
    _schedule_args(plan)
    plan.set_defaults(func=cmd_plan)
    check = csub.add_parser("check", help="run the checkers again over a saved history")
    check.add_argument("history", metavar="HISTORY", help="history.jsonl of a run")
    check.set_defaults(func=cmd_check)


def _schedule_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", required=True, choices=sorted(SCENARIOS), metavar="NAME",
                   help="one of: " + ", ".join(SCENARIOS))
    p.add_argument("--seed", type=int, default=None,
                   help="seed; the same seed replays (default: a random one, printed)")
    p.add_argument("--duration", type=duration, default=60.0, metavar="D",
                   help="run length, e.g. 45s or 2m (60s); a duration too short for the "
                        "scenario's first fault is refused with the minimum")
    p.add_argument("-c", "--config", metavar="FILE",
                   help="test the nodes, ports and timings of this cluster file (data still "
                        "goes under the run's directory); default: a cluster of the run's own "
                        "on free ports, with short timings")
    p.add_argument("--margin", type=duration_or_zero, default=None, metavar="D",
                   help="slack added to every liveness deadline (max(2s, heartbeat/4))")
    load = p.add_argument_group("production load (--load)")
    load.add_argument("--load", action="store_true",
                      help="run the scenario under load: master/slave brokers with compressed "
                           "registrations on every node plus pipelined route reads")
    load.add_argument("--load-brokers", type=int_range(2, 100_000), default=DEFAULT_BROKERS,
                      metavar="N",
                      help=f"target brokers, in master/slave pairs ({DEFAULT_BROKERS})")
    load.add_argument("--load-topics", type=int_range(1, 100_000), default=DEFAULT_TOPICS,
                      metavar="N",
                      help=f"topics per broker ({DEFAULT_TOPICS})")
    load.add_argument("--load-reads", type=float, default=DEFAULT_READS, metavar="R",
                      help=f"target successful route reads per second, all nodes "
                           f"({DEFAULT_READS:g})")
    load.add_argument("--heartbeat", type=duration, default=None, metavar="D",
                      help="heartbeat period of the load's brokers, e.g. 5s "
                           "(default: brokers.heartbeat_ms of the cluster file)")


def load_plan(args: argparse.Namespace, cfg: ClusterConfig) -> LoadPlan | None:
    """The ``--load`` plan of the command line for ``cfg`` (None without ``--load``)."""
    if not args.load:
        return None
    heartbeat = args.heartbeat or cfg.broker_heartbeat_ms / 1000
    try:
        return LoadPlan(brokers=args.load_brokers, topics_per_broker=args.load_topics,
                        heartbeat_s=heartbeat, reads_per_s=args.load_reads,
                        nodes=len(cfg.nodes))
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _seed(args: argparse.Namespace) -> int:
    if args.seed is None:
        args.seed = random.randrange(1 << 31)
    return int(args.seed)


def _options(args: argparse.Namespace, cfg: ClusterConfig, out: Path) -> ChaosOptions:
    from cluster.chaos.runner import ChaosOptions

    return ChaosOptions(args.scenario, _seed(args), args.duration, out, args.config,
                        getattr(args, "brokers", 2), args.margin,
                        lambda line: print(line, flush=True),
                        audit=getattr(args, "audit", True), load=load_plan(args, cfg))


def cmd_run(args: argparse.Namespace) -> int:
    from cluster.chaos.runner import run_chaos

    cfg = planned_cluster(args.config)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.out or f"chaos-out/{args.scenario}-{_seed(args)}-{stamp}")
    report = run_chaos(_options(args, cfg, out))  # a too short duration: refused, nothing made
    if report.interrupted:
        return 130
    return 0 if report.ok else 1


def cmd_plan(args: argparse.Namespace) -> int:
    """The schedule ``chaos run`` with the same options would apply (same cluster, same
    refusal of a too short duration)."""
    from cluster.chaos.runner import plan_schedule

    cfg = planned_cluster(args.config)
    opts = _options(args, cfg, Path("."))
    schedule, timing = plan_schedule(opts, cfg)
    print(f"scenario={schedule.scenario} seed={schedule.seed} "
          f"schedule={schedule.fingerprint()} faults={len(schedule.events)} "
          f"duration={args.duration:g}s heartbeat={timing.heartbeat_s:g}s "
          f"expiry={timing.expiry_s:g}s cluster={args.config or 'its own'}")
    for line in schedule.describe():
        print(line)
    for line in [] if opts.load is None else opts.load.describe():
        print(f"load {line}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from cluster.chaos.all_checks import run_checks
    from cluster.chaos.checkers import CheckConfig, HistoryView, config_from_history
    from cluster.chaos.history import read_history

    path = Path(args.history)
    if not path.is_file():
        raise UserError(f"{path}: no such history file")
    ops = read_history(path)
    view = HistoryView(ops)
    cfg: CheckConfig = config_from_history(view)
    results = run_checks(ops, cfg)
    for r in results:
        tag = "SKIP" if r.skipped else ("PASS" if r.ok else "FAIL")
        print(f"{tag} {r.kind:<8} {r.name:<26} {r.summary}")
        for ev in [] if r.ok else r.evidence:
            print(f"       evidence: {orjson.dumps(ev).decode()[:400]}")
    ok = all(r.ok for r in results)
    print(f"RESULT: {'PASS' if ok else 'FAIL'}")
    sys.stdout.flush()
    return 0 if ok else 1
