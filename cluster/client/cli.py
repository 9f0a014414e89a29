"""``pynamesrv`` subcommands of the client: ``broker-sim`` here, the admin verbs in ``admin``.

Every command takes ``-n "host:port;host:port"`` or ``-c cluster.yaml`` (default:
``$NAMESRV_ADDR``, else the default ``cluster.yaml``; see ``targets``), prints
human output or, with ``--json``, JSON. Exit status: 0 on success, 1 when a
node failed or answered with an error, 2 on bad input.
"""

from __future__ import annotations

import argparse
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from cluster.client import admin
from cluster.client.admin import common_args, plain
from cluster.client.broker_sim import (
    DEFAULT_BASE_PORT,
    MAX_SLAVES,
    BrokerSimulation,
    NodeCounters,
    SimOptions,
    check_base_port,
    choose_base_port,
    every,
)
from cluster.client.credentials import credentials_from_args
from cluster.client.fanout import CLIENT_VERSION
from cluster.client.heartbeat import MAX_PERIOD, MIN_PERIOD
from cluster.client.targets import NodeSet, resolve_args
from cluster.core.argtypes import Subparsers, int_range, one_line
from cluster.core.durations import duration, duration_or_zero
from cluster.core.errors import UserError

# --------------------------------------------------------------- broker-sim


def _summary(sim: BrokerSimulation, elapsed: float, regs: int, window_regs: int,
             window: float, nodes: dict[str, NodeCounters], as_json: bool) -> str:
    rate = window_regs / window if window > 0 else 0.0
    if as_json:
        return orjson.dumps({"t": round(elapsed, 3), "brokers": len(sim.live()),
                             "registrations": regs, "regs_per_s": round(rate, 2),
                             "nodes": {a: plain(n) for a, n in nodes.items()}}).decode()
    parts = [f"t={elapsed:6.1f}s live={len(sim.live())}/{len(sim.brokers)} "
             f"regs={regs} ({rate:.1f}/s)"]
    for addr, n in sorted(nodes.items()):
        parts.append(f"{addr} ok={n.ok + n.sent} skip={n.skipped} fail={n.failed} "
                     f"to={n.timed_out}")
    return " | ".join(parts)


def _sim_options(args: argparse.Namespace, nodes: NodeSet) -> SimOptions:
    """The heartbeat period defaults to the cluster file's ``brokers.heartbeat_ms``, else 30 s."""
    file_period = None if nodes.config is None else nodes.config.broker_heartbeat_ms / 1000.0
    period = args.period if args.period is not None else (file_period or 30.0)
    clamp = (args.min_period, MAX_PERIOD) if args.min_period is not None \
        else (MIN_PERIOD, MAX_PERIOD)
    return SimOptions(period=period, clamp=clamp, timeout=args.register_timeout,
                      retry_interval=args.retry_interval, version=args.version,
                      compressed=args.compressed, oneway=args.oneway,
                      force_register=not args.need_register,
                      credentials=credentials_from_args(args))


def _event(text: str, elapsed: float, as_json: bool) -> None:
    if as_json:
        print(orjson.dumps({"t": round(elapsed, 3), "event": text}).decode(), flush=True)
    else:
        print(f"t={elapsed:6.1f}s event: {text}", flush=True)


def _sim_ticks(sim: BrokerSimulation, args: argparse.Namespace,
               log: Callable[[str], None]) -> list[Callable[[float], None]]:
    def bump() -> None:
        b = sim.bump_random()
        if b is not None:
            log(f"bump {b.who.broker_name} -> {b.data_version['counter']}")

    def churn() -> None:
        change = sim.churn()
        if change:
            log(f"topic {change}")

    def once(at: float, action: Callable[[], None]) -> Callable[[float], None]:
        done = [False]

        def tick(elapsed: float) -> None:
            if at > 0 and not done[0] and elapsed >= at:
                done[0] = True
                action()
        return tick

    def crash() -> None:
        gone = sim.crash(args.crash_count, close_connections=args.crash_mode == "close")
        log("crash " + ",".join(b.name for b in gone))

    def unregister() -> None:
        gone = sim.unregister(args.unregister_count)
        log("unregister " + ",".join(b.name for b in gone))

    return [every(args.bump_every, bump), every(args.churn_every, churn),
            once(args.crash_after, crash), once(args.unregister_after, unregister)]


class _Stop:
    """SIGTERM (and SIGHUP) end the run like Ctrl-C: a flag the loop reads, set from the
    handler (no lock taken there). Also in the background with ``&``, where the shell makes
    the simulator ignore SIGINT."""

    def __init__(self) -> None:
        self.signal: str | None = None

    @contextmanager
    def handling(self) -> Iterator[None]:
        def handler(signum: int, _frame: Any) -> None:
            self.signal = signal.Signals(signum).name

        old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
        try:
            yield
        finally:
            for sig, was in old.items():
                signal.signal(sig, was)


def _base_port(args: argparse.Namespace) -> int:
    if args.base_port is None:
        return choose_base_port(args.brokers, args.slaves)
    check_base_port(args.brokers, args.slaves, args.base_port)
    return int(args.base_port)


def _broker_sim(args: argparse.Namespace) -> int:
    node_set = resolve_args(args)
    try:
        opts = _sim_options(args, node_set)
        base = _base_port(args)
        sim = BrokerSimulation(node_set.addrs, groups=args.brokers, slaves=args.slaves,
                               cluster=args.cluster, topics=args.topics, queues=args.queues,
                               perm=args.perm, opts=opts, seed=args.seed,
                               prefix=args.broker_prefix, base_port=base)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    start = time.monotonic()

    def log(text: str) -> None:
        _event(text, time.monotonic() - start, args.json)

    ticks = _sim_ticks(sim, args, log)
    stop = _Stop()
    with stop.handling():
        log(f"brokers at {sim.brokers[0].who.broker_addr} .. "
            f"{sim.brokers[-1].who.broker_addr} (base port {base})")
        sim.start()
        try:
            _sim_loop(sim, args, start, ticks, stop)
        except KeyboardInterrupt:
            pass
        finally:
            if stop.signal:
                log(f"{stop.signal}: stopping")
            sim.stop(unregister=not args.no_unregister)
    regs, nodes = sim.stats.snapshot()
    print(_summary(sim, time.monotonic() - start, regs, regs, time.monotonic() - start, nodes,
                   args.json), flush=True)
    return 0


def _sim_loop(sim: BrokerSimulation, args: argparse.Namespace, start: float,
              ticks: list[Callable[[float], None]], stop: _Stop) -> None:
    last_t, last_regs = start, 0
    next_report = start + args.report_every
    while stop.signal is None:
        now = time.monotonic()
        elapsed = now - start
        if args.duration and elapsed >= args.duration:
            return
        for tick in ticks:
            tick(elapsed)
        if now >= next_report:
            regs, nodes = sim.stats.snapshot()
            print(_summary(sim, elapsed, regs, regs - last_regs, now - last_t, nodes, args.json),
                  flush=True)
            last_t, last_regs = now, regs
            next_report = now + args.report_every
        time.sleep(min(0.1, max(0.0, next_report - time.monotonic())))


# ------------------------------------------------------------------- parser


def _sim_parser(sub: Subparsers) -> None:
    p = sub.add_parser("broker-sim", help="simulated brokers registering to every node",
                       description="Run simulated brokers that register to every node of a "
                                   "cluster on a heartbeat schedule; prints a live summary. "
                                   "Ctrl-C or SIGTERM unregisters them and exits. Times take "
                                   "500ms, 2s, 1.5m, 1h or a bare number of seconds.")
    common_args(p)
    a = p.add_argument
    a("-b", "--brokers", type=int_range(1, 10_000), default=2,
      help="broker groups (masters), default 2")
    a("--slaves", type=int_range(0, MAX_SLAVES), default=0,
      help=f"slaves per group (0-{MAX_SLAVES})")
    a("--cluster", type=one_line, default="DefaultCluster", help="cluster name")
    a("--broker-prefix", type=one_line, default="broker-",
      help="broker name prefix (broker-0, broker-1, ...)")
    a("--base-port", type=int_range(1, 65535), default=None, metavar="PORT",
      help=f"group g's master is 127.0.0.1:PORT+10g, its slaves +2 each, HA addresses +1 "
           f"(default: {DEFAULT_BASE_PORT}, moved up past any port with a listener); refused "
           f"when a port of the block has a listener")
    a("-t", "--topics", type=int_range(0, 1_000_000), default=8, help="topics per broker")
    a("--queues", type=int_range(1, 1024), default=4, help="read/write queues per topic")
    a("--perm", type=int_range(0, 7), default=6, help="topic permission bits (default 6 = RW)")
    a("--period", type=duration, default=None,
      help="heartbeat period (default: brokers.heartbeat_ms of -c, else 30s)")
    a("--min-period", type=duration, default=None,
      help=f"lower clamp of the period (default {MIN_PERIOD:g}s; lower only for tests)")
    a("--register-timeout", type=duration, default=None,
      help="fan-out timeout (default min(6s, period))")
    a("--retry-interval", type=duration, default=1.0, help="retry period for failed nodes (1s)")
    a("--version", type=int_range(0, 2**31 - 1), default=CLIENT_VERSION,
      help="remoting version to send")
    a("--compressed", action="store_true", help="send the compressed RegisterBrokerBody")
    a("--oneway", action="store_true", help="register oneway (no replies)")
    a("--need-register", action="store_true",
      help="forceRegister=false: QUERY_DATA_VERSION first, register only on change")
    a("--duration", type=duration_or_zero, default=0.0,
      help="how long to run, e.g. 120s (0 = until Ctrl-C or SIGTERM)")
    a("--report-every", type=duration, default=1.0, help="time between summary lines (1s)")
    a("--bump-every", type=duration_or_zero, default=0.0,
      help="bump a random group's data version this often (0 = never)")
    a("--churn-every", type=duration_or_zero, default=0.0,
      help="add or remove a topic of a random group this often (0 = never)")
    a("--crash-after", type=duration_or_zero, default=0.0,
      help="crash brokers after this long (0 = never)")
    a("--crash-count", type=int_range(1, 100_000), default=1, help="brokers to crash")
    a("--crash-mode", choices=("close", "silent"), default="close",
      help="close: connections die with the broker; silent: they stay open (expiry path)")
    a("--unregister-after", type=duration_or_zero, default=0.0,
      help="unregister brokers after this long (0 = never)")
    a("--unregister-count", type=int_range(1, 100_000), default=1, help="brokers to unregister")
    a("--no-unregister", action="store_true", help="do not unregister on exit")
    a("--seed", type=int, default=None, help="random seed for picks")
    p.set_defaults(func=_broker_sim)


def register(sub: Subparsers) -> None:
    _sim_parser(sub)
    admin.register(sub)
