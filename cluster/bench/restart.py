"""Time to serve again after a server restart: stop the server, start it on the same port
and directory while the workload's brokers keep registering on their own schedule, and
ask for a sample of the workload's topics until every one is routed whole again (all its
broker names and addresses), as a client would see it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster.core.node_link import NodeLink, NotAnswering
from cluster.core.protocol import route_bodies
from cluster.core.protocol.body_common import BodyError
from cluster.core.protocol.codes import RequestCode

POLL_S = 0.02  # pause between rounds over the topics not whole yet
CALL_S = 1.0


@dataclass(frozen=True)
class Expect:
    """A topic and what its whole route lists."""

    topic: str
    names: int
    addrs: int


def expectations(layout: dict[str, Any]) -> list[Expect]:
    """From ``rmqload layout ... --sample N``'s JSON line."""
    return [Expect(s["topic"], int(s["names"]), int(s["addrs"])) for s in layout["sample"]]


def whole(route: dict[str, Any] | None, want: Expect) -> bool:
    if not route:
        return False
    datas = route.get("brokerDatas") or []
    addrs = sum(len(bd.get("brokerAddrs") or {}) for bd in datas)
    return len(datas) >= want.names and addrs >= want.addrs


def _route(link: NodeLink, topic: str) -> dict[str, Any] | None:
    try:
        reply = link.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, CALL_S, ext={"topic": topic})
    except NotAnswering:
        return None
    try:
        return route_bodies.decode_topic_route(reply.body or b"")
    except BodyError:
        return None


def wait_whole(host: str, port: int, sample: list[Expect], timeout: float,
               clock: Callable[[], float] = time.monotonic) -> float | None:
    """Seconds until every sampled topic is routed whole, or None after ``timeout``."""
    t0 = clock()
    pending = list(sample)
    link = NodeLink(host, port)
    try:
        while pending:
            pending = [w for w in pending if not whole(_route(link, w.topic), w)]
            if not pending:
                break
            if clock() - t0 > timeout:
                return None
            time.sleep(POLL_S)
        return clock() - t0
    finally:
        link.close()


def restart_and_wait(stop: Callable[[], float], start: Callable[[], float], host: str,
                     port: int, sample: list[Expect], timeout: float) -> dict[str, Any]:
    """Stop, start, wait until the sample is whole: each step's seconds, and ``serve_s``,
    from the stop to the last topic whole (None when it never was within ``timeout``)."""
    t0 = time.monotonic()
    stop_s = stop()
    boot_s = start()
    whole_s = wait_whole(host, port, sample, timeout)
    serve = None if whole_s is None else round(time.monotonic() - t0, 3)
    return {"stop_s": round(stop_s, 3), "boot_s": round(boot_s, 3),
            "whole_after_boot_s": None if whole_s is None else round(whole_s, 3),
            "serve_s": serve, "topics": len(sample), "timeout_s": timeout}
