"""What auditing costs a NameServer: one audit round of a node with many topics.

    python -m cluster.bench.audit_read --spawn --topics 50000        # a local node
    python -m cluster.bench.audit_read -n HOST:PORT --pid PID          # a running one (Java)

Registers ``--brokers`` masters each carrying every one of ``--topics`` topics (their
connections stay open, as a broker's do), then runs ``--rounds`` audit rounds of the
node read by its snapshot (code 60001, pynamesrv only) and read the standard way
(106, 206, 105 per topic, 219; ``cluster.audit.reader``) with ``--budget`` requests per
round and ``--concurrency`` in flight. Per round: requests, bytes sent and received,
wall time and the CPU the node spent (its whole process tree; with ``--spawn`` or
``--pid``), and how many rounds a full pass over the topics takes.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from cluster.audit.reader import FIXED_REQUESTS, ClusterReader, Kind, ReadLimits
from cluster.bench.fanout import spawned_nodes
from cluster.bench.sampler import tree_cpu_s
from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload


def _table(topics: int) -> dict[str, dict[str, Any]]:
    return {f"AuditTopic-{i:05d}": {"topicName": f"AuditTopic-{i:05d}", "readQueueNums": 8,
                                    "writeQueueNums": 8, "perm": 6} for i in range(topics)}


def register(api: BrokerOuterAPI, brokers: int, topics: int) -> None:
    payload = RegisterPayload.build({"counter": 1, "timestamp": 1}, _table(topics), [], True)
    for b in range(brokers):
        who = BrokerIdentity("AuditCluster", f"audit-broker-{b}", f"127.0.0.1:{40911 + b}", 0,
                             f"127.0.0.1:{41911 + b}")
        result = api.register_broker_all(who, payload, timeout=120.0)
        if not result.all_ok:
            raise RuntimeError(f"registration of {who.broker_name} failed: {result}")


def _cpu_s(pid: int | None) -> float:
    return 0.0 if pid is None else tree_cpu_s(pid)


def measure(addr: str, pid: int | None, limits: ReadLimits, rounds: int) -> dict[str, Any]:
    """Median per-round figures of ``rounds`` rounds after one warm-up round."""
    rows: list[dict[str, float]] = []
    with ClusterReader({"node": addr}, limits) as reader:
        for i in range(rounds + 1):
            cpu0, t0 = _cpu_s(pid), time.perf_counter()
            read = reader.read_round()["node"]
            wall, cpu = time.perf_counter() - t0, _cpu_s(pid) - cpu0
            if read.error is not None:
                raise RuntimeError(f"round failed: {read.error}")
            if read.kind is not limits.force:
                return {"impossible": f"read {read.kind.value if read.kind else '?'} instead: "
                                      "the snapshot does not fit in a frame"}
            if i:  # the first round carries the kind probe
                rows.append({"requests": read.requests, "sent": read.sent_bytes,
                             "received": read.received_bytes, "wall_s": wall, "cpu_s": cpu,
                             "routes": read.routes_read, "topics": len(read.listed)})
    out = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    room = limits.budget - FIXED_REQUESTS - len(limits.namespaces)
    out["rounds_per_pass"] = 1 if limits.force is not Kind.STANDARD else \
        math.ceil(out["topics"] / room)
    return out


def _print(label: str, m: dict[str, Any], interval_s: float) -> None:
    if "impossible" in m:
        print(f"{label:<28}{m['impossible']}")
        return
    print(f"{label:<28}{m['requests']:>9.0f}{m['sent'] / 1024:>10.0f}{m['received'] / 1024:>12.0f}"
          f"{m['wall_s']:>9.2f}{m['cpu_s']:>9.2f}{m['rounds_per_pass']:>7}"
          f"{m['requests'] / interval_s:>10.0f}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("-n", "--namesrv", help="HOST:PORT of a running NameServer")
    src.add_argument("--spawn", action="store_true", help="start a local node for the run")
    p.add_argument("--pid", type=int, help="pid of the running NameServer, for its CPU")
    p.add_argument("--topics", type=int, default=50_000)
    p.add_argument("--brokers", type=int, default=4, help="masters carrying every topic (4)")
    p.add_argument("--no-register", action="store_true", help="the brokers are there already")
    p.add_argument("--budget", type=int, default=ReadLimits().budget)
    p.add_argument("--concurrency", type=int, default=ReadLimits().concurrency)
    p.add_argument("--interval", type=float, default=10.0,
                   help="the collection interval the requests/s column assumes (10)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        if args.spawn:
            with spawned_nodes(1, Path(tmp)) as addrs:
                pid = _node_pid(addrs[0])
                return _run(addrs[0], pid, args, snapshot=True)
        return _run(args.namesrv, args.pid, args, snapshot=False)


def _node_pid(addr: str) -> int | None:
    port = int(addr.rsplit(":", 1)[1])
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            pid = conn.pid
            while pid is not None and psutil.Process(pid).name().startswith("pns-io"):
                pid = psutil.Process(pid).ppid()
            return pid
    return None


def _run(addr: str, pid: int | None, args: argparse.Namespace, snapshot: bool) -> int:
    with BrokerOuterAPI([addr], register_timeout=120.0) as api:
        if not args.no_register:
            t0 = time.perf_counter()
            register(api, args.brokers, args.topics)
            print(f"registered {args.brokers} brokers x {args.topics} topics in "
                  f"{time.perf_counter() - t0:.1f} s")
        print(f"{'read':<28}{'requests':>9}{'sent KiB':>10}{'recv KiB':>12}{'wall s':>9}"
              f"{'node cpu':>9}{'pass':>7}{'req/s@int':>10}")
        base = {"timeout_s": args.timeout, "concurrency": args.concurrency,
                "budget": args.budget}
        if snapshot:
            m = measure(addr, pid, ReadLimits(**base, force=Kind.SNAPSHOT), args.rounds)
            _print("snapshot (60001)", m, args.interval)
        m = measure(addr, pid, ReadLimits(**base, force=Kind.STANDARD), args.rounds)
        _print(f"standard, budget {args.budget}", m, args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
