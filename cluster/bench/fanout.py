"""Benchmark of the broker fan-out: 3 nodes vs 1 node, and a 10,000-topic broker.

    python -m cluster.bench.fanout --spawn 3            # start 3 local nodes
    python -m cluster.bench.fanout -n "h:p;h:p;h:p"     # use running nodes

Measures (each registration alternates two data versions, so every node
re-applies the whole topic table, the expensive path):

* wall time of one REGISTER_BROKER fan-out to the first node alone and to all
  nodes, for a small broker and for a ``--big``-topic broker (median, p90);
* registrations/s of the big broker: sequential fan-outs per second, and
  node-registrations per second (fan-outs x nodes);
* the time to encode the big body once (plain and compressed).
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from cluster.bench.servers import free_port
from cluster.client.connection import split_addrs
from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload
from cluster.core.durations import duration

WHO = BrokerIdentity("BenchCluster", "bench-broker", "127.0.0.1:30911", 0, "127.0.0.1:30912")


def _wait_boot(proc: subprocess.Popen[str], timeout: float) -> None:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout) or "boot success" not in proc.stdout.readline():
            raise RuntimeError("node did not report boot success")


@contextmanager
def spawned_nodes(count: int, root: Path) -> Iterator[list[str]]:
    """``count`` nodes (``python -m worker.controller``) on free ports; always reaped."""
    procs: list[subprocess.Popen[str]] = []
    addrs: list[str] = []
    try:
        for i in range(count):
            port = free_port()
            argv = [sys.executable, "-m", "worker.controller", "--exit-with-parent",
                    "--port", str(port),
                    "--data-dir", str(root / f"n{i}"), "--name", f"bench{i}"]
            procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True,
                                          start_new_session=True))
            _wait_boot(procs[-1], 30.0)
            addrs.append(f"127.0.0.1:{port}")
        yield addrs
    finally:
        for proc in procs:
            _reap(proc)


def _reap(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    if proc.stdout is not None:
        proc.stdout.close()


def topics(count: int) -> dict[str, dict[str, Any]]:
    return {f"BenchTopic-{i:05d}": {"topicName": f"BenchTopic-{i:05d}", "readQueueNums": 8,
                                    "writeQueueNums": 8, "perm": 6} for i in range(count)}


def payloads(count: int, compressed: bool) -> list[RegisterPayload]:
    """Two payloads with different data versions, to alternate between."""
    table = topics(count)
    return [RegisterPayload.build({"counter": c, "timestamp": 1700000000000 + c}, table, [],
                                  compressed) for c in (1, 2)]


def time_fanouts(api: BrokerOuterAPI, addrs: Sequence[str], pls: list[RegisterPayload],
                 rounds: int, timeout: float) -> dict[str, float]:
    """Run ``rounds`` sequential fan-outs; wall-time stats in ms and rounds/s."""
    times: list[float] = []
    failures = 0
    start = time.perf_counter()
    for i in range(rounds):
        t0 = time.perf_counter()
        result = api.register_broker_all(WHO, pls[i % 2], timeout=timeout, addrs=addrs)
        times.append((time.perf_counter() - t0) * 1000)
        failures += 0 if result.all_ok else 1
    total = time.perf_counter() - start
    times.sort()
    return {"nodes": len(addrs), "rounds": rounds, "failed_rounds": failures,
            "median_ms": round(statistics.median(times), 3),
            "p90_ms": round(times[int(0.9 * (len(times) - 1))], 3),
            "fanouts_per_s": round(rounds / total, 2),
            "node_registrations_per_s": round(rounds * len(addrs) / total, 2)}


def encode_cost(count: int) -> dict[str, float]:
    table = topics(count)
    out = {}
    for compressed in (False, True):
        t0 = time.perf_counter()
        payload = RegisterPayload.build({"counter": 1, "timestamp": 1}, table, [], compressed)
        key = "compressed" if compressed else "plain"
        out[f"encode_{key}_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        out[f"body_{key}_bytes"] = len(payload.body)
    return out


def run(addrs: list[str], args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"nodes": addrs, "big_topics": args.big}
    report.update(encode_cost(args.big))
    small, big = payloads(args.small, args.compressed), payloads(args.big, args.compressed)
    with BrokerOuterAPI(addrs, register_timeout=args.timeout) as api:
        time_fanouts(api, addrs, small, 5, args.timeout)  # connect and warm up
        for label, pls, rounds in (("small", small, args.rounds), ("big", big, args.big_rounds)):
            report[f"{label}_1_node"] = time_fanouts(api, addrs[:1], pls, rounds, args.timeout)
            report[f"{label}_{len(addrs)}_nodes"] = time_fanouts(api, addrs, pls, rounds,
                                                                 args.timeout)
        api.unregister_broker_all(WHO)
    return report


def _print(report: dict[str, Any]) -> None:
    print(f"nodes: {' '.join(report['nodes'])}")
    print(f"big broker: {report['big_topics']} topics, body {report['body_plain_bytes']} B "
          f"(compressed {report['body_compressed_bytes']} B), encode "
          f"{report['encode_plain_ms']} ms (compressed {report['encode_compressed_ms']} ms)")
    print(f"{'case':<16}{'nodes':>6}{'median ms':>11}{'p90 ms':>9}{'fanouts/s':>11}"
          f"{'node regs/s':>13}{'failed':>8}")
    for key, row in report.items():
        if isinstance(row, dict):
            print(f"{key:<16}{row['nodes']:>6}{row['median_ms']:>11.2f}{row['p90_ms']:>9.2f}"
                  f"{row['fanouts_per_s']:>11.1f}{row['node_registrations_per_s']:>13.1f}"
                  f"{row['failed_rounds']:>8}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m cluster.bench.fanout",
                                description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("-n", "--namesrv", help='"host:port;host:port;..." of running nodes')
    src.add_argument("--spawn", type=int, help="start this many local nodes for the run")
    p.add_argument("--small", type=int, default=10, help="topics of the small broker")
    p.add_argument("--big", type=int, default=10000, help="topics of the big broker")
    p.add_argument("--rounds", type=int, default=200, help="fan-outs per small case")
    p.add_argument("--big-rounds", type=int, default=20, help="fan-outs per big case")
    p.add_argument("--timeout", type=duration, default=10.0, help="fan-out timeout (10s)")
    p.add_argument("--compressed", action="store_true", help="compressed register bodies")
    p.add_argument("--json", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.namesrv:
        report = run(split_addrs(args.namesrv), args)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp, \
                spawned_nodes(args.spawn, Path(tmp)) as addrs:
            report = run(addrs, args)
    if args.json:
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
    else:
        _print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
