"""``pynamesrv`` subcommands of the client: ``broker-sim`` and mqadmin-named admin commands.

Every command takes ``-n "host:port;host:port"`` or ``-c cluster.yaml`` (default:
``$NAMESRV_ADDR``, else the default ``cluster.yaml``), prints human output or,
with ``--json``, one JSON document. Exit status: 0 on success, 1 when a node
failed or answered with an error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from cluster.client.broker_sim import BrokerSimulation, NodeCounters, SimOptions, every
from cluster.client.errors import ClientError
from cluster.client.fanout import CLIENT_VERSION, FanoutResult
from cluster.client.heartbeat import MAX_PERIOD, MIN_PERIOD
from cluster.client.nsclient import NameServerClient
from cluster.errors import UserError

Command = Callable[[argparse.Namespace], int]


# ------------------------------------------------------------------ helpers


def _namesrv_addr(args: argparse.Namespace) -> str:
    if args.namesrv:
        return str(args.namesrv)
    if args.config is None and os.environ.get("NAMESRV_ADDR"):
        return os.environ["NAMESRV_ADDR"]
    from cluster.config import load_cluster

    return load_cluster(args.config).namesrv_addr()


def _cluster_heartbeat_s(args: argparse.Namespace) -> float | None:
    if args.namesrv or args.config is None:
        return None
    from cluster.config import load_cluster

    return load_cluster(args.config).broker_heartbeat_ms / 1000.0


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [_plain(v) for v in obj]
    if isinstance(obj, BaseException):
        return f"{type(obj).__name__}: {obj}"
    if hasattr(obj, "value") and hasattr(obj, "name") and not isinstance(obj, (int, str)):
        return obj.value
    return obj


def _dump(obj: Any) -> str:
    return orjson.dumps(_plain(obj), option=orjson.OPT_INDENT_2).decode()


def _client(args: argparse.Namespace) -> NameServerClient:
    try:
        return NameServerClient(_namesrv_addr(args), timeout=args.timeout)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _run(fn: Callable[[NameServerClient, argparse.Namespace], int]) -> Command:
    def command(args: argparse.Namespace) -> int:
        client = _client(args)
        try:
            return fn(client, args)
        except ClientError as exc:
            print(f"pynamesrv: {exc.kind} error: {exc}", file=sys.stderr)
            return 1
        finally:
            client.close()
    return command


def _report(result: FanoutResult, args: argparse.Namespace,
            show: Callable[[str, Any], None] | None = None) -> int:
    if args.json:
        print(_dump({a: {"status": o.status.value, "value": o.value,
                         "error": None if o.error is None else str(o.error),
                         "elapsed_ms": round(o.elapsed * 1000, 3)}
                     for a, o in result.outcomes.items()}))
    else:
        for addr, outcome in result.outcomes.items():
            if outcome.ok and show is not None:
                show(addr, outcome.value)
            else:
                print(outcome.describe())
    return 0 if result.all_ok else 1


# ----------------------------------------------------------------- commands


def _cluster_list(c: NameServerClient, args: argparse.Namespace) -> int:
    info = _plain(c.get_cluster_info())
    if args.json:
        print(_dump(info))
        return 0
    print(f"{'#Cluster Name':<22}{'#Broker Name':<22}{'#BID':<6}#Addr")
    brokers = info.get("brokerAddrTable") or {}
    for cluster, names in sorted((info.get("clusterAddrTable") or {}).items()):
        for name in sorted(names):
            addrs = (brokers.get(name) or {}).get("brokerAddrs") or {}
            for bid, addr in sorted(addrs.items(), key=lambda kv: int(kv[0])):
                print(f"{cluster:<22}{name:<22}{bid!s:<6}{addr}")
    return 0


def _topic_route(c: NameServerClient, args: argparse.Namespace) -> int:
    print(_dump(c.get_route(args.topic)))
    return 0


def _topic_list(c: NameServerClient, args: argparse.Namespace) -> int:
    topics = _plain(c.get_all_topics())
    names = topics.get("topicList", []) if isinstance(topics, dict) else topics
    if args.json:
        print(_dump(sorted(names)))
    else:
        for name in sorted(names):
            print(name)
    return 0


def _get_kv(c: NameServerClient, args: argparse.Namespace) -> int:
    value = c.get_kv(args.namespace, args.key)
    if args.json:
        print(_dump({"namespace": args.namespace, "key": args.key, "value": value}))
    elif value is None:
        print(f"No config item, Namespace: {args.namespace} Key: {args.key}", file=sys.stderr)
    else:
        print(value)
    return 0 if value is not None else 1


def _update_kv(c: NameServerClient, args: argparse.Namespace) -> int:
    return _report(c.put_kv(args.namespace, args.key, args.value), args,
                   lambda a, _: print(f"{a} update kv config success"))


def _delete_kv(c: NameServerClient, args: argparse.Namespace) -> int:
    return _report(c.delete_kv(args.namespace, args.key), args,
                   lambda a, _: print(f"{a} delete kv config success"))


def _show_config(addr: str, props: dict[str, str]) -> None:
    print(f"============{addr}============")
    for key in sorted(props):
        print(f"{key:<50}=  {props[key]}")


def _get_namesrv_config(c: NameServerClient, args: argparse.Namespace) -> int:
    return _report(c.get_namesrv_config(), args, _show_config)


def _update_namesrv_config(c: NameServerClient, args: argparse.Namespace) -> int:
    return _report(c.update_namesrv_config({args.key: args.value}), args,
                   lambda a, _: print(f"{a} update name server config success"))


# --------------------------------------------------------------- broker-sim


def _summary(sim: BrokerSimulation, elapsed: float, regs: int, window_regs: int,
             window: float, nodes: dict[str, NodeCounters], as_json: bool) -> str:
    rate = window_regs / window if window > 0 else 0.0
    if as_json:
        return orjson.dumps({"t": round(elapsed, 3), "brokers": len(sim.live()),
                             "registrations": regs, "regs_per_s": round(rate, 2),
                             "nodes": {a: _plain(n) for a, n in nodes.items()}}).decode()
    parts = [f"t={elapsed:6.1f}s live={len(sim.live())}/{len(sim.brokers)} "
             f"regs={regs} ({rate:.1f}/s)"]
    for addr, n in sorted(nodes.items()):
        parts.append(f"{addr} ok={n.ok + n.sent} skip={n.skipped} fail={n.failed} "
                     f"to={n.timed_out}")
    return " | ".join(parts)


def _sim_options(args: argparse.Namespace) -> SimOptions:
    period = args.period if args.period is not None else (_cluster_heartbeat_s(args) or 30.0)
    clamp = (args.min_period, MAX_PERIOD) if args.min_period is not None \
        else (MIN_PERIOD, MAX_PERIOD)
    return SimOptions(period=period, clamp=clamp, timeout=args.register_timeout,
                      retry_interval=args.retry_interval, version=args.version,
                      compressed=args.compressed, oneway=args.oneway,
                      force_register=not args.need_register)


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


def _broker_sim(args: argparse.Namespace) -> int:
    try:
        addrs = _namesrv_addr(args)
        opts = _sim_options(args)
        sim = BrokerSimulation(addrs.split(";"), groups=args.brokers, slaves=args.slaves,
                               cluster=args.cluster, topics=args.topics, queues=args.queues,
                               perm=args.perm, opts=opts, seed=args.seed,
                               prefix=args.broker_prefix)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    start = time.monotonic()
    ticks = _sim_ticks(sim, args, lambda text: _event(text, time.monotonic() - start, args.json))
    sim.start()
    try:
        _sim_loop(sim, args, start, ticks)
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop(unregister=not args.no_unregister)
    regs, nodes = sim.stats.snapshot()
    print(_summary(sim, time.monotonic() - start, regs, regs, time.monotonic() - start, nodes,
                   args.json), flush=True)
    return 0


def _sim_loop(sim: BrokerSimulation, args: argparse.Namespace, start: float,
              ticks: list[Callable[[float], None]]) -> None:
    last_t, last_regs = start, 0
    next_report = start + args.report_every
    while True:
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


def _common(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("-n", "--namesrv", metavar="ADDRS", help='"host:port;host:port"')
    src.add_argument("-c", "--config", metavar="CLUSTER_YAML",
                     help="cluster.yaml to read nodes from")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds per call (default 3)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _admin(sub: argparse._SubParsersAction, name: str, fn: Callable[..., int],
           help_text: str) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text)
    _common(p)
    p.set_defaults(func=_run(fn))
    return p


def _sim_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("broker-sim", help="simulated brokers registering to every node",
                       description="Run simulated brokers that register to every node of a "
                                   "cluster on a heartbeat schedule; prints a live summary.")
    _common(p)
    a = p.add_argument
    a("-b", "--brokers", type=int, default=2, help="broker groups (masters), default 2")
    a("--slaves", type=int, default=0, help="slaves per group (0-4)")
    a("--cluster", default="DefaultCluster", help="cluster name")
    a("--broker-prefix", default="broker-", help="broker name prefix (broker-0, broker-1, ...)")
    a("-t", "--topics", type=int, default=8, help="topics per broker")
    a("--queues", type=int, default=4, help="read/write queues per topic")
    a("--perm", type=int, default=6, help="topic permission bits (default 6 = RW)")
    a("--period", type=float, default=None,
      help="heartbeat period in seconds (default: brokers.heartbeat_ms of -c, else 30)")
    a("--min-period", type=float, default=None,
      help=f"lower clamp of the period (default {MIN_PERIOD:g}; lower only for tests)")
    a("--register-timeout", type=float, default=None,
      help="fan-out timeout (default min(6, period))")
    a("--retry-interval", type=float, default=1.0, help="retry period for failed nodes")
    a("--version", type=int, default=CLIENT_VERSION, help="remoting version to send")
    a("--compressed", action="store_true", help="send the compressed RegisterBrokerBody")
    a("--oneway", action="store_true", help="register oneway (no replies)")
    a("--need-register", action="store_true",
      help="forceRegister=false: QUERY_DATA_VERSION first, register only on change")
    a("--duration", type=float, default=0.0, help="seconds to run (0 = until Ctrl-C)")
    a("--report-every", type=float, default=1.0, help="seconds between summary lines")
    a("--bump-every", type=float, default=0.0, help="bump a random group's data version")
    a("--churn-every", type=float, default=0.0, help="add or remove a topic of a random group")
    a("--crash-after", type=float, default=0.0, help="crash brokers after this many seconds")
    a("--crash-count", type=int, default=1, help="brokers to crash")
    a("--crash-mode", choices=("close", "silent"), default="close",
      help="close: connections die with the broker; silent: they stay open (expiry path)")
    a("--unregister-after", type=float, default=0.0, help="unregister brokers after N seconds")
    a("--unregister-count", type=int, default=1, help="brokers to unregister")
    a("--no-unregister", action="store_true", help="do not unregister on exit")
    a("--seed", type=int, default=None, help="random seed for picks")
    p.set_defaults(func=_broker_sim)


def register(sub: argparse._SubParsersAction) -> None:
    _sim_parser(sub)
    _admin(sub, "clusterList", _cluster_list, "list clusters, brokers and addresses")
    p = _admin(sub, "topicRoute", _topic_route, "show a topic's route")
    p.add_argument("-t", "--topic", required=True)
    _admin(sub, "topicList", _topic_list, "list every topic")
    for name, fn, help_text, needs_value in (
        ("getKvConfig", _get_kv, "get one KV config item", False),
        ("updateKvConfig", _update_kv, "put a KV config item on every node", True),
        ("deleteKvConfig", _delete_kv, "delete a KV config item on every node", False),
    ):
        p = _admin(sub, name, fn, help_text)
        p.add_argument("-s", "--namespace", required=True)
        p.add_argument("-k", "--key", required=True)
        if needs_value:
            p.add_argument("-v", "--value", required=True)
    _admin(sub, "getNamesrvConfig", _get_namesrv_config, "show every node's configuration")
    p = _admin(sub, "updateNamesrvConfig", _update_namesrv_config,
               "update one configuration key on every node")
    p.add_argument("-k", "--key", required=True)
    p.add_argument("-v", "--value", required=True)
