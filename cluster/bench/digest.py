"""Cost of the divergence signal on a 40,000-topic node: CPU on the node, bytes on the wire.

    python -m cluster.bench.digest [--clusters 4 --brokers 8 --topics 10000] [--rounds 20]

Starts one node, registers the mixed layout (``--clusters`` x ``--brokers`` masters,
each cluster's brokers sharing ``--topics`` topics: 40,000 topics, 320,000 queue
entries by default) over kept connections, then times, as CPU seconds of the
node's whole process tree and reply bytes:

* the first GET_NODE_DIGEST summary of a business worker (it hashes every entry);
* a summary while nothing changed (what every status page round costs);
* a summary after a change (a KV put moves the route generation: every table is
  scanned again, only changed entries hashed);
* a drill-down into one bucket of the topic table;
* GET_NODE_SNAPSHOT (the whole tables), for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from cluster.bench.fanout import spawned_nodes
from cluster.bench.sampler import tree_cpu_s
from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload
from cluster.core.node_link import NodeLink
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.digest_body import DigestQuery, encode_query

SETTLE_S = 0.3


def _node_pid(port: int) -> int:
    for p in psutil.process_iter(["cmdline"]):
        line = p.info["cmdline"] or []
        if "worker.controller" in line and str(port) in line:
            return int(p.pid)
    raise RuntimeError(f"no node process on port {port}")


def _register(addr: str, clusters: int, brokers: int, topics: int) -> BrokerOuterAPI:
    api = BrokerOuterAPI([addr])
    for c in range(clusters):
        configs = {f"C{c}-Topic-{i}": {"topicName": f"C{c}-Topic-{i}", "perm": 6,
                                       "readQueueNums": 8, "writeQueueNums": 8}
                   for i in range(topics)}
        payload = RegisterPayload.build({"counter": 1, "timestamp": 1}, configs)
        for b in range(brokers):
            who = BrokerIdentity(f"cluster-{c}", f"broker-{c}-{b}",
                                 f"127.0.0.1:{31000 + c * 100 + b}", 0, "")
            result = api.register_broker_all(who, payload, timeout=60.0)
            if not result.all_ok:
                raise RuntimeError(f"registration failed: {result}")
    return api


def _measure(pid: int, link: NodeLink, ask: Callable[[], None], rounds: int,
             before: Callable[[], None] | None = None) -> tuple[float, float, int]:
    """(mean CPU ms, wall ms, reply bytes) per call of ``ask``, over ``rounds`` calls (CPU
    is read in 10 ms ticks, so only the sum over many calls says much)."""
    cpu = wall = 0.0
    sizes = []
    for _ in range(rounds):
        if before is not None:
            before()
            time.sleep(SETTLE_S)  # let the node finish what ``before`` caused
        got, t0, w0 = link.received, tree_cpu_s(pid), time.perf_counter()
        ask()
        wall += time.perf_counter() - w0
        cpu += tree_cpu_s(pid) - t0
        sizes.append(link.received - got)
    return cpu * 1000 / rounds, wall * 1000 / rounds, int(statistics.median(sizes))


def run(clusters: int, brokers: int, topics: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="pns-digest-") as tmp, \
            spawned_nodes(1, Path(tmp)) as addrs:
        host, port = addrs[0].rsplit(":", 1)
        pid = _node_pid(int(port))
        t0 = time.monotonic()
        api = _register(addrs[0], clusters, brokers, topics)
        print(f"node with {clusters * topics:,} topics, {clusters * brokers * topics:,} queue "
              f"entries ({clusters * brokers} brokers) registered in "
              f"{time.monotonic() - t0:.1f}s")
        link = NodeLink(host, int(port), "audit", max_frame=1 << 30)  # snapshots are large
        counter = iter(range(10**9))

        def summary() -> None:
            link.call(RequestCode.GET_NODE_DIGEST, 60.0)

        def change() -> None:
            link.call(RequestCode.PUT_KV_CONFIG, 10.0,
                      ext={"namespace": "BENCH", "key": "k", "value": str(next(counter))})

        def drill() -> None:
            link.call(RequestCode.GET_NODE_DIGEST, 60.0,
                      encode_query(DigestQuery("topic", buckets=frozenset({0}))))

        def snapshot() -> None:
            link.call(RequestCode.GET_NODE_SNAPSHOT, 60.0)

        rows = [("first summary (hashes every entry)", _measure(pid, link, summary, 1)),
                ("summary, nothing changed", _measure(pid, link, summary, rounds * 10)),
                ("summary after a change", _measure(pid, link, summary, rounds, change)),
                ("drill-down into 1 of 256 topic buckets", _measure(pid, link, drill,
                                                                    rounds * 10)),
                ("GET_NODE_SNAPSHOT (whole tables)", _measure(pid, link, snapshot,
                                                              max(3, rounds // 4)))]
        print(f"{'request':<42} {'node CPU':>10} {'wall':>10} {'reply bytes':>12}")
        for name, (cpu, wall, size) in rows:
            print(f"{name:<42} {cpu:>7.1f} ms {wall:>7.1f} ms {size:>12,}")
        link.close()
        api.close()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m cluster.bench.digest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clusters", type=int, default=4)
    p.add_argument("--brokers", type=int, default=8, help="masters per cluster (8)")
    p.add_argument("--topics", type=int, default=10_000, help="topics per cluster (10,000)")
    p.add_argument("--rounds", type=int, default=20)
    args = p.parse_args(argv)
    run(args.clusters, args.brokers, args.topics, args.rounds)


if __name__ == "__main__":
    main()
