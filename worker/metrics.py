"""Worker-side metrics: plain counters on the request path, a snapshot pushed once a second.

The request path touches only ints, dicts and a fixed bucket list (``bisect``); no
prometheus_client object is used in a worker. About once a second each worker
PUSHes its cumulative totals (``wire.METRICS``, one frame, JSON) to the controller,
which serves them (``worker.controller.metrics_server``).
"""

from __future__ import annotations

import contextlib
import os
import time
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import zmq

from cluster.core.protocol.codes import CLIENT_ORIGIN, ORIGIN_FIELD, ORIGINS
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.peek import peek_code
from worker import wire
from worker.procs import control_endpoint

PUSH_EVERY_S = 1.0
# Request latency bucket bounds, seconds (Prometheus ``le``: a value equal to a bound is in it).
LATENCY_BOUNDS: tuple[float, ...] = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5, 5.0)
MAX_CODES = 256  # distinct request codes counted one by one; the rest under OTHER
OTHER = -1
NO_REPLY = "none"  # result label of a request answered by no reply (oneway)



def frame_code(frame: bytes) -> int:
    """The request code of a frame (header word, header, body) from its header; OTHER if none."""
    code = peek_code(frame)
    return OTHER if code is None else code


def origin_of(cmd: RemotingCommand) -> str:
    """Who sent a request, for ``pynamesrv_requests_total{origin}``: a monitoring tool that
    names itself (``ORIGINS``), else ``client``."""
    ext = cmd.ext_fields
    origin = ext.get(ORIGIN_FIELD) if ext else None
    return origin if origin in ORIGINS else CLIENT_ORIGIN


def reply_code(reply: bytes) -> int:
    """The response code of an encoded reply (with its length word); OTHER if not found."""
    return frame_code(reply[4:])


@dataclass
class Histogram:
    """Counts per latency bucket (not cumulative; the last slot is +Inf) and their sum."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BOUNDS) + 1))
    total: float = 0.0

    def observe(self, seconds: float, n: int = 1) -> None:
        self.counts[bisect_left(LATENCY_BOUNDS, seconds)] += n
        self.total += seconds * n


@dataclass
class WorkerMetrics:
    """Cumulative totals of one worker process since it started."""

    kind: str
    index: int
    pid: int = field(default_factory=os.getpid)
    # (code, result, origin) -> n
    requests: dict[tuple[int, int | str, str], int] = field(default_factory=dict)
    latency: dict[int, Histogram] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)  # name → n
    limits: dict[str, int] = field(default_factory=dict)  # limit → refused/closed connections
    gauges: dict[str, int] = field(default_factory=dict)  # name → current value

    def code_key(self, code: int) -> int:
        return code if code in self.latency or len(self.latency) < MAX_CODES else OTHER

    def request(self, code: int, result: int | str, n: int = 1,
                origin: str = CLIENT_ORIGIN) -> None:
        key = (code, result, origin)
        requests = self.requests
        if key in requests:
            requests[key] += n
        elif len(requests) < MAX_CODES:
            requests[key] = n
        else:
            other = (OTHER, result, origin)
            requests[other] = requests.get(other, 0) + n

    def observe(self, code: int, seconds: float, n: int = 1) -> None:
        hist = self.latency.get(code)
        if hist is None:
            hist = self.latency.setdefault(self.code_key(code), Histogram())
        hist.counts[bisect_left(LATENCY_BOUNDS, seconds)] += n
        hist.total += seconds * n

    def add(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def snapshot(self) -> bytes:
        """This worker's totals as one ``wire.METRICS`` message."""
        doc = {"kind": self.kind, "index": self.index, "pid": self.pid,
               "requests": [[c, str(r), o, n] for (c, r, o), n in self.requests.items()],
               "latency": [[c, h.counts, h.total] for c, h in self.latency.items()],
               "counters": self.counters, "limits": self.limits, "gauges": self.gauges}
        return wire.METRICS + orjson.dumps(doc)


def parse_snapshot(message: bytes) -> dict[str, Any] | None:
    """The document of a ``wire.METRICS`` message, or None when it is not one."""
    if message[:1] != wire.METRICS:
        return None
    try:
        doc = orjson.loads(message[1:])
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) and {"kind", "index", "pid"} <= doc.keys() else None


class Pusher:
    """PUSHes a worker's snapshot to the controller at most once per PUSH_EVERY_S."""

    def __init__(self, zctx: Any, run: Path) -> None:
        self.sock = zctx.socket(zmq.PUSH)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.SNDHWM, 4)  # a stalled controller gets fresh totals, not old
        self.sock.connect(control_endpoint(run))
        self.next_at = 0.0

    def due(self) -> bool:
        return time.monotonic() >= self.next_at

    def push(self, metrics: WorkerMetrics) -> None:
        self.next_at = time.monotonic() + PUSH_EVERY_S
        with contextlib.suppress(zmq.Again):  # the next push carries the same totals, and more
            self.sock.send(metrics.snapshot(), flags=zmq.NOBLOCK)

    def close(self) -> None:
        self.sock.close(0)
