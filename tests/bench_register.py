"""In-process cost of REGISTER_BROKER through ``handle()`` (no network), by case.

    .venv/bin/python -m tests.bench_register [--topics 10000] [--rounds 30] [--body-5x]
    .venv/bin/python -m tests.bench_register --tcp [--seconds 8] [--java]

One master of ``--topics`` topics registers first, then each case repeats a registration
and reports the median and p90 in milliseconds. Cases: unchanged data version, bumped
version with an identical table, bumped version with 1 / 100 / every topic changed, and
the same 1 / 100 with a compressed body. ``--body-5x``: the plain bodies as a 5.x broker
writes them (stateVersion, mappingDataVersion, TopicConfig attributes, the static-topic
maps) and the header's enableActingMaster.

``--tcp`` starts a node (and with ``--java`` the real Java NameServer 4.9.8 after it) and
sends it bumped registrations with 1 and 100 topics changed over one connection, one request
in flight, for ``--seconds`` each: registrations/s. The frames are built before the clock
starts, so the client costs both servers the same little.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from cluster.bench.servers import Target, running
from cluster.core.protocol import body_common, register_body
from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import encode_command
from state import nsconfig
from state.store import Store
from worker.business.context import NodeContext
from worker.business.processors import handle

NAME, ADDR = "broker-a", "10.0.0.1:10911"
FIVE = {"on": False}  # --body-5x


def _request(configs: dict[str, dict[str, Any]], counter: int, compressed: bool
             ) -> RemotingCommand:
    five = FIVE["on"] and not compressed
    dv = {"counter": counter, "stateVersion": 0, "timestamp": 1} if five else \
        {"counter": counter, "timestamp": 1}
    if five:
        configs = {k: {**c, "attributes": {}} for k, c in configs.items()}
    body = register_body.encode_register_body(dv, configs, [], compressed, with_attributes=five,
                                              mappings={} if five else None)
    if five:
        body = body.replace(b'"topicConfigTable":', b'"mappingDataVersion":{"counter":0,'
                            b'"stateVersion":0,"timestamp":%d},"topicConfigTable":' % counter, 1)
    ext = {"brokerName": NAME, "brokerAddr": ADDR, "clusterName": "C", "brokerId": "0",
           "haServerAddr": ADDR, "compressed": str(compressed).lower(),
           "bodyCrc32": str(body_common.crc32_java(body))}
    if FIVE["on"]:
        ext["enableActingMaster"] = "false"
    return RemotingCommand(code=103, opaque=1, flag=0, version=409, ext_fields=ext, body=body)


def _configs(topics: int, changed: int, round_no: int) -> dict[str, dict[str, Any]]:
    """``topics`` configs of which ``changed``, spread evenly over the table (a broker's
    table is in hash order), carry queue numbers of this round."""
    step = topics // changed if changed else 0
    moved = {step // 2 + k * step for k in range(changed)}
    return {f"Topic{i:05d}": register_body.topic_config(
        f"Topic{i:05d}", read_queue_nums=8 + (round_no % 7 if i in moved else 0),
        write_queue_nums=8) for i in range(topics)}


def _timed(ctx: NodeContext, requests: list[RemotingCommand]
           ) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU milliseconds of each request."""
    wall, cpu = [], []
    for req in requests:
        start, start_cpu = time.perf_counter(), time.process_time()
        reply = handle(ctx, req, "0.1.1", ADDR)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
        assert reply is not None and reply.code == ResponseCode.SUCCESS, reply
    return wall, cpu


def run(topics: int, rounds: int, report: Callable[[str], None] = print) -> dict[str, float]:
    cases: dict[str, Callable[[int], RemotingCommand]] = {
        "unchanged version": lambda r: _request(_configs(topics, 0, 0), 1, False),
        "bumped, same table": lambda r: _request(_configs(topics, 0, 0), 2 + r, False),
        "bumped, 1 changed": lambda r: _request(_configs(topics, 1, r + 1), 2 + r, False),
        "bumped, 100 changed": lambda r: _request(_configs(topics, 100, r + 1), 2 + r, False),
        "bumped, all changed": lambda r: _request(_configs(topics, topics, r + 1), 2 + r, False),
        "compressed, 1 changed": lambda r: _request(_configs(topics, 1, r + 1), 2 + r, True),
        "compressed, 100 changed": lambda r: _request(_configs(topics, 100, r + 1), 2 + r, True),
    }
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, make in cases.items():
            store = Store.create(f"{tmp}/{len(medians)}", 256 << 20)
            nsconfig.initialize(store, {}, f"{tmp}/ns.properties", f"{tmp}/kv.json")
            ctx = NodeContext(store=store, node_name="bench", clock=lambda: 1000)
            first, first_cpu = _timed(ctx, [_request(_configs(topics, 0, 0), 1, False)])
            if not medians:
                report(f"{'first registration':24} {first[0]:8.2f} ms {first_cpu[0]:8.2f} ms cpu")
            times, cpu = _timed(ctx, [make(r) for r in range(rounds)])
            medians[label] = statistics.median(times)
            p90 = statistics.quantiles(times, n=10)[-1]
            report(f"{label:24} {medians[label]:8.2f} ms median {p90:8.2f} ms p90"
                   f" {statistics.median(cpu):8.2f} ms cpu  ({1000 / medians[label]:.0f}/s)")
            store.destroy()
    return medians


def _recv_frame(sock: socket.socket) -> bytes:
    head = _recv_exact(sock, 4)
    return _recv_exact(sock, int.from_bytes(head, "big"))


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("node closed the connection")
        out += chunk
    return bytes(out)


def _bumped(tail: bytes, counter: int) -> bytes:
    """A plain register frame: data version ``counter``, then ``tail`` (the topic table)."""
    head = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
            b'{"counter":%d,"timestamp":1}' % counter)
    body = head + tail
    ext = {"brokerName": NAME, "brokerAddr": ADDR, "clusterName": "C", "brokerId": "0",
           "haServerAddr": ADDR, "compressed": "false",
           "bodyCrc32": str(body_common.crc32_java(body))}
    return encode_command(RemotingCommand(code=103, opaque=counter, flag=0, version=409,
                                          ext_fields=ext, body=body))


def _tcp_frames(topics: int, changed: int) -> list[bytes]:
    """Bumped registration frames, built before the clock starts: ``changed`` topics differ
    between consecutive frames, every frame has a data version of its own."""
    variants = 7  # distinct values cycled by the changed topics
    tails = []
    for r in range(variants):
        body = _request(_configs(topics, changed, r), 1, False).body or b""
        head = register_body.register_head(body, False, 409)
        assert head is not None
        tails.append(body[head.table_offset:])
    return [_bumped(tails[i % variants], i + 1) for i in range(2 * variants)]


def _tcp_rate(addr: str, frames: list[bytes], seconds: float) -> float:
    """Registrations/s over one connection, one request in flight."""
    host, port = addr.split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(frames[-1])  # the broker's first registration
        _recv_frame(sock)
        sent, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            sock.sendall(frames[sent % len(frames)])
            _recv_frame(sock)
            sent += 1
        return sent / (time.perf_counter() - start)


def run_tcp(topics: int, seconds: float, java: bool,
            report: Callable[[str], None] = print) -> None:
    """Bumped registrations with 1 and 100 changed topics against a fresh node, and with
    ``java`` against a fresh real Java NameServer 4.9.8 (warmed for ``seconds`` first)."""
    frames = {changed: _tcp_frames(topics, changed) for changed in (1, 100)}
    kinds = ("node", "java") if java else ("node",)
    for kind in kinds:
        target = Target("java", "4.9") if kind == "java" else Target("node")
        with running(target, {}, "1g") as server:
            addr = server.addr
            if kind == "java":
                _tcp_rate(addr, frames[100], seconds)  # JIT warm-up
            for changed, built in frames.items():
                report(f"{kind} tcp bumped, {changed} changed: "
                       f"{_tcp_rate(addr, built, seconds):.0f} regs/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tcp", action="store_true")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--java", action="store_true",
                        help="with --tcp: also the real Java NameServer 4.9.8, same client")
    parser.add_argument("--body-5x", action="store_true", help="in process: 5.x bodies")
    args = parser.parse_args()
    FIVE["on"] = args.body_5x
    if args.tcp:
        run_tcp(args.topics, args.seconds, args.java)
    else:
        run(args.topics, args.rounds)


if __name__ == "__main__":
    main()
