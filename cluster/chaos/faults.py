"""Faults and their undos, applied to a live cluster.

Each fault is a pair of functions ``(apply, undo)`` taking the ``FaultContext``
and the scheduled ``FaultEvent`` and returning a dict of evidence for the
history. Node faults go through the supervisor (``ControlClient``) or signal a
worker found with psutil; network faults reconfigure the node's proxy; broker
faults act on the workload's simulated brokers.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from cluster.audit.reader import ClusterReader, NodeFailed
from cluster.chaos import hostile
from cluster.chaos.proxy import ProxyFaults, ProxyHost
from cluster.chaos.schedule import FaultEvent
from cluster.chaos.workload import Workload
from cluster.client.errors import ClientError
from supervisor.control_client import ControlClient

POLL_S = 0.1
WORKER_PREFIX = {"io": "pns-io-", "business": "pns-biz-"}


class FaultError(Exception):
    """A fault could not be applied or undone (the node never came back, no worker, ...)."""


@dataclass
class FaultContext:
    control: ControlClient
    proxies: ProxyHost
    workload: Workload
    node_addrs: dict[str, str]
    probe: ClusterReader  # the nodes by name, read by their snapshot
    ready_timeout_s: float = 30.0
    killed_workers: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def node_status(self, node: str) -> dict[str, Any]:
        return self.control.node_status(node)

    def answers(self, node: str) -> bool:
        try:
            self.probe.read_node(node)
        except (ClientError, NodeFailed):
            return False
        return True


def wait_for(what: str, cond: Callable[[], bool], timeout_s: float) -> float:
    """Poll ``cond`` until true; returns the seconds it took, raises FaultError on timeout."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout_s:
            raise FaultError(f"{what} not reached within {timeout_s:g}s")
        time.sleep(POLL_S)
    return round(time.monotonic() - start, 3)


def _running(ctx: FaultContext, node: str, not_pid: int | None = None) -> bool:
    st = ctx.node_status(node)
    return st["state"] == "running" and (not_pid is None or st["pid"] != not_pid)


def _wait_serving(ctx: FaultContext, node: str, not_pid: int | None = None) -> dict[str, Any]:
    took = wait_for(f"{node} running", lambda: _running(ctx, node, not_pid), ctx.ready_timeout_s)
    took += wait_for(f"{node} answering", lambda: ctx.answers(node), ctx.ready_timeout_s)
    st = ctx.node_status(node)
    return {"pid": st["pid"], "restarts": st["restarts"], "waited_s": round(took, 3)}


# ------------------------------------------------------------------ node faults

def kill_node(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    pid = ctx.node_status(e.target)["pid"]
    ctx.control.kill(e.target, "KILL")
    return {"killed_pid": pid}


def await_restart(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    st = ctx.node_status(e.target)
    if st["state"] in ("stopped", "failed"):
        ctx.control.start(e.target)
    return _wait_serving(ctx, e.target)


def _workers(ctx: FaultContext, node: str, role: str) -> list[psutil.Process]:
    root = psutil.Process(ctx.node_status(node)["pid"])
    prefix = WORKER_PREFIX[role]
    found = []
    for p in root.children(recursive=True):
        try:
            if p.name().startswith(prefix) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except psutil.NoSuchProcess:
            continue
    return sorted(found, key=lambda p: p.name())


def kill_worker(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    role = str(e.params.get("role", "business"))
    workers = _workers(ctx, e.target, role)
    if not workers:
        raise FaultError(f"{e.target} has no {role} worker")
    victim = workers[0]
    ctx.killed_workers[(e.target, role)] = (len(workers), victim.pid)
    os.kill(victim.pid, signal.SIGKILL)
    return {"role": role, "worker": victim.name(), "killed_pid": victim.pid}


def await_worker(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    role = str(e.params.get("role", "business"))
    count, killed = ctx.killed_workers.pop((e.target, role), (1, -1))

    def replaced() -> bool:
        pids = [p.pid for p in _workers(ctx, e.target, role)]
        return len(pids) >= count and killed not in pids
    took = wait_for(f"{e.target} {role} worker back", replaced, ctx.ready_timeout_s)
    took += wait_for(f"{e.target} answering", lambda: ctx.answers(e.target), ctx.ready_timeout_s)
    return {"workers": [p.name() for p in _workers(ctx, e.target, role)], "waited_s": took}


def pause_node(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    return {"reply": ctx.control.pause(e.target).get("ok")}


def resume_node(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    ctx.control.resume(e.target)
    return _wait_serving(ctx, e.target)


def stop_node(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    ctx.control.stop(e.target)
    took = wait_for(f"{e.target} stopped",
                    lambda: ctx.node_status(e.target)["state"] == "stopped", ctx.ready_timeout_s)
    return {"waited_s": took}


def start_node(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    ctx.control.start(e.target)
    return _wait_serving(ctx, e.target)


# --------------------------------------------------------------- network faults

def _proxy_faults(e: FaultEvent) -> ProxyFaults:
    p = e.params
    if e.fault == "net_slow":
        return ProxyFaults.slow(float(p.get("latency_ms", 200)), float(p.get("jitter_ms", 0)))
    if e.fault == "net_lossy":
        return ProxyFaults.lossy(float(p.get("loss", 0.2)), float(p.get("retransmit_ms", 200)))
    if e.fault == "net_blackhole":
        return ProxyFaults.blackhole()
    if e.fault == "net_cut":
        return ProxyFaults.cut(str(p.get("direction", "down")))
    if e.fault == "net_reset":
        return ProxyFaults(refuse=True)
    raise FaultError(f"not a network fault: {e.fault}")


def net_fault(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    ctx.proxies.set_faults(e.target, _proxy_faults(e))
    reset = ctx.proxies.reset_connections(e.target) if e.fault == "net_reset" else 0
    return {"reset_connections": reset} if e.fault == "net_reset" else {}


def net_heal(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    ctx.proxies.heal(e.target)
    return {"proxy": ctx.proxies.stats()[e.target]}


# ---------------------------------------------------------------- broker faults

def broker_crash(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    close = bool(e.params.get("close_connections", False))
    ctx.workload.crash_broker(e.target, close_connections=close)
    return {"close_connections": close}


def broker_unregister(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    result = ctx.workload.unregister_broker(e.target)
    return {"outcomes": result.counts()}


def broker_restart(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    ctx.workload.start_broker(e.target)
    return {}


def hostile_client(ctx: FaultContext, e: FaultEvent) -> dict[str, Any]:
    host, port = ctx.node_addrs[e.target].rsplit(":", 1)
    p = e.params
    return hostile.attack(host, int(port), str(p.get("kind", "garbage")),
                          int(p.get("frames", 10)), int(p.get("seed", 0)))


Step = Callable[[FaultContext, FaultEvent], dict[str, Any]]
FAULTS: dict[str, tuple[Step, Step | None]] = {
    "kill_node": (kill_node, await_restart),
    "kill_worker": (kill_worker, await_worker),
    "pause_node": (pause_node, resume_node),
    "stop_node": (stop_node, start_node),
    "net_slow": (net_fault, net_heal),
    "net_lossy": (net_fault, net_heal),
    "net_blackhole": (net_fault, net_heal),
    "net_cut": (net_fault, net_heal),
    "net_reset": (net_fault, net_heal),
    "broker_crash": (broker_crash, broker_restart),
    "broker_unregister": (broker_unregister, broker_restart),
    "hostile_client": (hostile_client, None),
}
